package dev.geniex.kotlin

import dev.geniex.ChatMessage
import dev.geniex.Device
import dev.geniex.GenieXException
import dev.geniex.Model
import dev.geniex.ModelBuilder
import dev.geniex.StatusCode
import dev.geniex.StopReason
import java.io.File
import java.util.concurrent.atomic.AtomicInteger
import kotlinx.coroutines.flow.collect
import kotlinx.coroutines.flow.map
import kotlinx.coroutines.flow.onEach
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.AfterAll
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.BeforeAll
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestInstance
import org.junit.jupiter.api.assertThrows

/** The Kotlin Flow API on Gemma 3 270M. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FlowTest {
  private lateinit var model: Model

  @BeforeAll
  fun load() = runBlocking {
    val path = System.getProperty("geniex.test.model")
    assertTrue(path != null && File(path).isFile, "the test model is missing: $path")
    model = ModelBuilder(path).device(Device.CPU).threads(2).contextSize(1024).buildAwait()
  }

  @AfterAll
  fun close() = model.close()

  private fun awaitIdle() {
    val deadline = System.nanoTime() + 30_000_000_000L
    while (model.engineStats().active() != 0 && System.nanoTime() < deadline) Thread.sleep(5)
    assertEquals(0, model.engineStats().active())
  }

  @Test
  fun flowPiecesConcatenateToTheBlockingResult() = runBlocking {
    val cfg = generationConfig { maxTokens = 24; temperature = 0f }
    val text = model.generateFlow("The quick brown fox", cfg).map { it.text() }.toList()
      .joinToString("")
    val blocking = model.generateAwait("The quick brown fox", cfg)
    assertEquals(blocking.text(), text)
    val chat = model.chatFlow(listOf(ChatMessage.user("Say hi.")), cfg).toList()
    assertTrue(chat.isNotEmpty())
  }

  @Test
  fun takeThreeStopsTheNativeGeneration() = runBlocking {
    val seen = AtomicInteger()
    val pieces = model.generateFlow("Once upon a time") {
      maxTokens = 800
      temperature = 0f
      ignoreEos = true
    }.onEach { seen.incrementAndGet() }.take(3).toList()
    assertEquals(3, pieces.size)
    awaitIdle()
    val stepsAfter = model.engineStats().steps()
    Thread.sleep(200)
    assertEquals(stepsAfter, model.engineStats().steps(), "the engine kept stepping")
  }

  @Test
  fun anExceptionEndsTheFlowWithThatException() = runBlocking {
    val e = assertThrows<GenieXException> {
      runBlocking { model.generateFlow("Hello") { maxTokens = -1 }.collect() }
    }
    assertEquals(StatusCode.INVALID_ARGUMENT, e.code())
    // A collector's own exception cancels the generation and surfaces unchanged.
    val boom = IllegalStateException("collector failed")
    val caught = assertThrows<IllegalStateException> {
      runBlocking {
        model.generateFlow("Once upon a time") { maxTokens = 800; ignoreEos = true }
          .collect { throw boom }
      }
    }
    // (kotlinx.coroutines' stack-trace recovery may hand back a copy: same class and message.)
    assertEquals(boom.message, caught.message)
    awaitIdle()
    val ok = model.generateAwait("Hello", generationConfig { maxTokens = 2; temperature = 0f })
    assertEquals(StopReason.MAX_TOKENS, ok.stopReason())
  }
}
