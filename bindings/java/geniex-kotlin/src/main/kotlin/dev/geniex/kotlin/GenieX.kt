// Kotlin coroutines over the GenieX Java API: Flows of pieces (cancelling the collector stops
// the native generation), suspend generate/chat/build, and a generationConfig { } builder.
package dev.geniex.kotlin

import dev.geniex.ChatMessage
import dev.geniex.Generation
import dev.geniex.GenerationConfig
import dev.geniex.GenerationTask
import dev.geniex.Model
import dev.geniex.ModelBuilder
import dev.geniex.Piece
import dev.geniex.TokenListener
import java.util.concurrent.CompletionException
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.asExecutor
import kotlinx.coroutines.channels.awaitClose
import kotlinx.coroutines.channels.trySendBlocking
import kotlinx.coroutines.flow.Flow
import kotlinx.coroutines.flow.callbackFlow
import kotlinx.coroutines.suspendCancellableCoroutine
import kotlinx.coroutines.withContext
import kotlin.coroutines.resume
import kotlin.coroutines.resumeWithException

/** Mutable mirror of [GenerationConfig.Builder] for `generationConfig { maxTokens = 64 }`. */
class GenerationConfigScope internal constructor(base: GenerationConfig) {
  var maxTokens: Int = base.maxTokens()
  var temperature: Float = base.temperature()
  var topK: Int = base.topK()
  var topP: Float = base.topP()
  var minP: Float = base.minP()
  var repetitionPenalty: Float = base.repetitionPenalty()
  var presencePenalty: Float = base.presencePenalty()
  var frequencyPenalty: Float = base.frequencyPenalty()
  var penaltyLastN: Int = base.penaltyLastN()
  var seed: Long? = base.seed()
  var stop: List<String> = base.stop()
  var ignoreEos: Boolean = base.ignoreEos()
  var parseSpecial: Boolean = base.parseSpecial()
  var addSpecial: Boolean = base.addSpecial()
  var jsonSchema: String = base.jsonSchema()

  internal fun build(): GenerationConfig =
    GenerationConfig.builder()
      .maxTokens(maxTokens).temperature(temperature).topK(topK).topP(topP).minP(minP)
      .repetitionPenalty(repetitionPenalty).presencePenalty(presencePenalty)
      .frequencyPenalty(frequencyPenalty).penaltyLastN(penaltyLastN).seed(seed).stop(stop)
      .ignoreEos(ignoreEos).parseSpecial(parseSpecial).addSpecial(addSpecial)
      .jsonSchema(jsonSchema).build()
}

/** `generationConfig { maxTokens = 64; temperature = 0f }`: the engine's defaults, changed. */
fun generationConfig(
  base: GenerationConfig = GenerationConfig.defaults(),
  block: GenerationConfigScope.() -> Unit,
): GenerationConfig = GenerationConfigScope(base).apply(block).build()

/**
 * The generation's pieces as a cold Flow: each collection runs one generation on
 * [Dispatchers.IO]. Cancelling the collector (for example `take(3)`) cancels the native
 * generation; an engine or listener error ends the Flow with that exception.
 */
fun Model.generateFlow(
  prompt: String,
  config: GenerationConfig = GenerationConfig.defaults(),
): Flow<Piece> = pieceFlow { listener -> generateAsync(prompt, config, listener, Dispatchers.IO.asExecutor()) }

fun Model.generateFlow(prompt: String, configure: GenerationConfigScope.() -> Unit): Flow<Piece> =
  generateFlow(prompt, generationConfig(block = configure))

/** [generateFlow] for a chat: the reply's pieces. */
fun Model.chatFlow(
  messages: List<ChatMessage>,
  config: GenerationConfig = GenerationConfig.defaults(),
): Flow<Piece> = pieceFlow { listener -> chatAsync(messages, config, listener, Dispatchers.IO.asExecutor()) }

private fun pieceFlow(start: (TokenListener) -> GenerationTask): Flow<Piece> = callbackFlow {
  // The listener runs on the generating thread: it blocks while the collector is slow, and a
  // closed channel (collector cancelled) makes it return false, which stops the generation.
  val task = start(TokenListener { text, token -> trySendBlocking(Piece(text, token)).isSuccess })
  task.result().whenComplete { _, error ->
    if (error == null) close() else close(unwrap(error))
  }
  awaitClose { task.cancel() }
}

private fun unwrap(t: Throwable): Throwable =
  if (t is CompletionException && t.cause != null) t.cause!! else t

/** generate() without blocking the caller; cancelling the coroutine cancels the generation. */
suspend fun Model.generateAwait(
  prompt: String,
  config: GenerationConfig = GenerationConfig.defaults(),
  listener: TokenListener? = null,
): Generation = awaitTask(generateAsync(prompt, config, listener, Dispatchers.IO.asExecutor()))

/** chat() without blocking the caller. */
suspend fun Model.chatAwait(
  messages: List<ChatMessage>,
  config: GenerationConfig = GenerationConfig.defaults(),
  listener: TokenListener? = null,
): Generation = awaitTask(chatAsync(messages, config, listener, Dispatchers.IO.asExecutor()))

private suspend fun awaitTask(task: GenerationTask): Generation =
  suspendCancellableCoroutine { cont ->
    cont.invokeOnCancellation { task.cancel() }
    task.result().whenComplete { g, error ->
      if (error == null) cont.resume(g) else cont.resumeWithException(unwrap(error))
    }
  }

/** Loads the model on [Dispatchers.IO]. */
suspend fun ModelBuilder.buildAwait(): Model = withContext(Dispatchers.IO) { build() }
