#include "server/completion_handler.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/access_log.h"
#include "server/json_prefix.h"
#include "server/model_route.h"
#include "server/response.h"
#include "server/router.h"

namespace geniex::server {
namespace {

using Clock = std::chrono::steady_clock;

HttpResponse send_error(const ApiError& e) { return json_response(e.status, e.body()); }

/// nginx's "client closed request": logged for a whole response nobody waited for.
constexpr int kClientClosed = 499;

ApiError from_status(const Status& s, const char* param) {
  if (s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kOutOfRange) {
    return invalid_value(param, s.message());
  }
  return internal_error(s.message());
}

/// A chat request's tools: the plan (when tools may be called) applied to the request's
/// messages, template options and constraint.
std::optional<ToolPlan> plan_request(const Model& m, CompletionRequest& r) {
  if (!r.tools.active()) {
    if (!r.tools.defs.empty()) r.chat_options.tools = r.tools.tools.dump();  // "none": shown
    return std::nullopt;
  }
  ToolPlan plan = plan_tools(detect_tool_format(m.chat_template_source()), r.tools, r.messages);
  r.messages = plan.messages;
  r.chat_options = plan.options;
  r.config.json_schema = plan.schema;
  r.config.render_special = true;  // Mistral's and LFM2's call marks are control tokens
  return plan;
}

/// The chat template's text for a request (tools and reply prefix included).
ApiResult<std::string> chat_prompt_text(const Model& m, const CompletionRequest& r) {
  auto text = m.apply_chat_template(r.messages, true, r.chat_options);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) {
      return unsupported("messages", text.status().message());
    }
    return invalid_value("messages", text.status().message());
  }
  return std::move(*text);
}

/// The prompt's token ids, as Model::chat / Model::generate(text) would make them.
ApiResult<std::vector<int32_t>> prompt_ids(const Model& m, const CompletionRequest& r) {
  std::vector<int32_t> ids;
  if (r.endpoint == Endpoint::kChat) {
    auto text = chat_prompt_text(m, r);
    if (auto* e = std::get_if<ApiError>(&text)) return *e;
    // Templates usually write the BOS text themselves; add it only when they do not.
    auto bos = m.tokenize("", true, false);
    auto plain = m.tokenize(std::get<std::string>(text), false, true);
    if (!bos.ok() || !plain.ok()) return internal_error("tokenizer failed on the chat prompt");
    const bool has_bos = !bos->empty() && plain->size() >= bos->size() &&
                         std::equal(bos->begin(), bos->end(), plain->begin());
    if (has_bos || bos->empty()) return std::move(*plain);
    ids = std::move(*bos);
    ids.insert(ids.end(), plain->begin(), plain->end());
    return ids;
  }
  if (r.prompt_is_tokens) {
    for (size_t i = 0; i < r.prompt_tokens.size(); ++i) {
      if (r.prompt_tokens[i] >= m.info().n_vocab) {
        return invalid_value("prompt", "token id " + std::to_string(r.prompt_tokens[i]) +
                                           " at index " + std::to_string(i) +
                                           " is outside the vocabulary (size " +
                                           std::to_string(m.info().n_vocab) + ").");
      }
    }
    return r.prompt_tokens;
  }
  auto t = m.tokenize(r.prompt, true, false);
  if (!t.ok()) return from_status(t.status(), "prompt");
  return std::move(*t);
}

/// A streamed request with images: its generation runs on a thread of its own and writes its
/// events here until the worker, which waited for the images to be encoded (so that a bad image
/// is still a plain 400, before the stream's 200 goes out), sends them.
struct Pipe final : StreamWriter {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> queue;
  bool encoded = false;                  ///< the images are in: prefill or generation began
  bool done = false;                     ///< the generation thread finished
  std::optional<ApiError> early_error;   ///< failed before the images were encoded
  std::atomic<bool> reader_gone{false};  ///< the client left (or the response was dropped)
  int64_t prompt_tokens = -1;            ///< what the model was fed, once known
  int64_t completion_tokens = -1;

  bool write(std::string_view data) override {
    if (reader_gone.load()) return false;
    std::lock_guard<std::mutex> l(mu);
    queue.emplace_back(data);
    cv.notify_all();
    return true;
  }
  void mark_encoded() {
    std::lock_guard<std::mutex> l(mu);
    if (encoded) return;
    encoded = true;
    cv.notify_all();
  }
  bool is_encoded() {
    std::lock_guard<std::mutex> l(mu);
    return encoded;
  }
  void finish() {
    std::lock_guard<std::mutex> l(mu);
    done = true;
    cv.notify_all();
  }
};

/// One admitted request: everything the generation needs, shared with the stream provider.
struct Job {
  ServerState& st;
  CompletionRequest req;
  /// The prompt's ids; for a request with images, its text ids (one marker token per image)
  /// until the generation reports what the model was fed.
  std::vector<int32_t> ids;
  ResponseMeta meta;
  Admission::Slot slot;
  Clock::time_point arrival;
  bool client_gone = false;
  std::shared_ptr<Pipe> pipe = nullptr;         ///< a streamed request with images (see Pipe)
  std::optional<ToolPlan> plan = std::nullopt;  ///< tools are active: how the reply is read
  ModelRef ref = {};                            ///< the model this request runs on
};

/// Gets each piece of text with the logprob entries of the tokens since the last piece (the
/// callee may take them). Returns false to stop (client gone).
using PieceSink = std::function<bool(std::string_view text, std::vector<LogprobEntry>& lps)>;

/// Runs the generation (the engine batches it with the other requests' generations). Logprob
/// entries not yet handed to `sink`
/// (tokens whose text never appeared) are left in `rest`.
Result<Generation> generate(Job& job, const PieceSink& sink, std::vector<LogprobEntry>& rest) {
  ServerState& st = job.st;
  GenerationConfig cfg = job.req.config;
  std::vector<LogprobEntry>& pending = rest;
  if (job.req.logprobs >= 0) {
    cfg.logprobs = job.req.logprobs;
    cfg.on_logprobs = [&](const TokenLogprobs& lp) {
      if (job.ref.model->is_end_of_generation(lp.chosen.token)) return;  // no text: not reported
      LogprobEntry e;
      e.chosen = {job.ref.texts->text(lp.chosen.token), lp.chosen.logprob};
      for (const auto& t : lp.top) e.top.push_back({job.ref.texts->text(t.token), t.logprob});
      pending.push_back(std::move(e));
    };
  }
  JsonPrefix json;
  if (job.req.json_object) {
    const std::vector<std::string>& table = job.ref.texts->table();
    cfg.token_filter = [&](int32_t t) {
      if (job.ref.model->is_end_of_generation(t)) return json.complete();
      const std::string& s = table[static_cast<size_t>(t)];
      return !s.empty() && json.feed(s);
    };
  }
  if (job.pipe) cfg.on_prefill_progress = [&job](int32_t, int32_t) { job.pipe->mark_encoded(); };
  int64_t counted = 0;
  const TokenCallback on_token = [&](std::string_view text, int32_t) {
    if (job.pipe) job.pipe->mark_encoded();
    if (counted++ == 0) {
      st.metrics.observe_ttft(std::chrono::duration<double>(Clock::now() - job.arrival).count());
    }
    st.metrics.add_generated_tokens(1);
    if (st.cancel_all.load()) return false;
    if (!sink(text, pending)) {
      job.client_gone = true;
      return false;
    }
    return true;
  };
  if (st.cancel_all.load()) return resource_exhausted("the server is shutting down");
  // Images: Model::chat encodes them (between engine steps) and expands their tokens.
  auto gen = job.req.n_images > 0
                 ? job.ref.model->chat(job.req.messages, job.req.chat_options, cfg, on_token)
                 : job.ref.model->generate(std::span<const int32_t>(job.ids), cfg, on_token);
  if (gen.ok() && job.req.n_images > 0) {
    this_request().prompt_tokens = static_cast<int64_t>(gen->prompt_tokens.size());
    if (job.pipe) job.pipe->prompt_tokens = static_cast<int64_t>(gen->prompt_tokens.size());
    st.metrics.add_prompt_tokens(static_cast<int64_t>(gen->prompt_tokens.size()) -
                                 static_cast<int64_t>(job.ids.size()));
  }
  if (gen.ok() && static_cast<int64_t>(gen->tokens.size()) > counted) {
    st.metrics.add_generated_tokens(static_cast<int64_t>(gen->tokens.size()) - counted);
  }
  if (gen.ok() && gen->stop_reason == StopReason::kCancelled) st.metrics.on_cancelled();
  return gen;
}

Usage usage_of(const Job& job, const Generation& g) {
  const size_t prompt = job.req.n_images > 0 ? g.prompt_tokens.size() : job.ids.size();
  return {static_cast<int64_t>(prompt), static_cast<int64_t>(g.tokens.size())};
}

/// Generates the whole answer; stops early when the client closes its connection (nobody would
/// read the answer, and its slot is wanted).
HttpResponse respond_whole(Job& job, const HttpRequest& http) {
  std::vector<LogprobEntry> all, rest;
  auto gen = generate(
      job,
      [&](std::string_view, std::vector<LogprobEntry>& lps) {
        for (auto& e : lps) all.push_back(std::move(e));
        lps.clear();
        return !http.peer_gone();
      },
      rest);
  if (gen.ok()) this_request().completion_tokens = static_cast<int64_t>(gen->tokens.size());
  if (job.client_gone) {
    this_request().client_closed = true;
    return send_error(ApiError{kClientClosed, "The client closed the connection.",
                               "invalid_request_error", std::nullopt, "client_closed"});
  }
  if (!gen.ok()) {
    if (job.st.cancel_all.load()) return send_error(shutting_down());
    return send_error(
        from_status(gen.status(), job.req.endpoint == Endpoint::kChat ? "messages" : "prompt"));
  }
  if (gen->stop_reason == StopReason::kCancelled) return send_error(shutting_down());
  if (job.plan) {
    const ParsedReply reply = parse_reply(*job.plan, job.req.tools, gen->text);
    const std::string_view finish =
        reply.calls.empty() ? finish_reason(gen->stop_reason) : std::string_view("tool_calls");
    Json j = chat_tool_completion_json(job.meta, reply.content, reply.calls, finish,
                                       usage_of(job, *gen));
    if (!reply.error.empty()) j["choices"][0]["tool_call_error"] = reply.error;
    return json_response(200, dump(j));
  }
  for (auto& e : rest) all.push_back(std::move(e));
  std::optional<std::vector<LogprobEntry>> lps;
  if (job.req.logprobs >= 0) lps = std::move(all);
  const Usage u = usage_of(job, *gen);
  const Json j =
      job.req.endpoint == Endpoint::kChat
          ? chat_completion_json(job.meta, gen->text, finish_reason(gen->stop_reason), u, lps)
          : text_completion_json(job.meta, gen->text, finish_reason(gen->stop_reason), u, lps);
  return json_response(200, dump(j));
}

/// Streams the whole generation into `sink` as Server-Sent Events.
void stream(Job& job, StreamWriter& sink) {
  const Endpoint ep = job.req.endpoint;
  const bool usage = job.req.include_usage;
  const bool want_lps = job.req.logprobs >= 0;
  auto write = [&](const std::string& s) { return sink.write(s); };
  if (ep == Endpoint::kChat) {
    ChunkParts role;
    role.role = true;
    role.content = "";
    if (!write(sse_event(stream_chunk_json(ep, job.meta, role, usage)))) {
      job.client_gone = true;
      return;
    }
  }
  size_t offset = 0;
  std::vector<LogprobEntry> rest;
  // With tools: the reply so far, and how much of it went out as content.
  std::string reply;
  size_t sent = 0;
  auto send_content = [&](std::string text) {
    ChunkParts p;
    p.content = std::move(text);
    return write(sse_event(stream_chunk_json(ep, job.meta, p, usage)));
  };
  auto gen = generate(
      job,
      [&](std::string_view text, std::vector<LogprobEntry>& lps) {
        if (job.plan) {
          lps.clear();
          reply.append(text);
          if (job.plan->format == ToolFormat::kGeneric) {
            // The envelope's answer streams as it is decoded; calls go out at the end.
            auto content = generic_content_prefix(reply);
            if (!content || content->size() <= sent) return true;
            const size_t from = sent;
            sent = content->size();
            return send_content(content->substr(from));
          }
          if (job.plan->constrained()) return true;  // the calls go out at the end
          const size_t ok = streamable_prefix(job.plan->format, reply);
          if (ok <= sent) return true;
          const size_t from = sent;
          sent = ok;
          return send_content(reply.substr(from, ok - from));
        }
        ChunkParts p;
        p.content = std::string(text);
        p.text_offset = offset;
        offset += text.size();
        if (want_lps) {
          p.logprobs = std::move(lps);
          lps.clear();
        }
        return write(sse_event(stream_chunk_json(ep, job.meta, p, usage)));
      },
      rest);
  if (gen.ok()) this_request().completion_tokens = static_cast<int64_t>(gen->tokens.size());
  if (gen.ok() && job.pipe) job.pipe->completion_tokens = static_cast<int64_t>(gen->tokens.size());
  if (job.client_gone) return;
  if (!gen.ok()) {
    if (job.pipe && !job.pipe->is_encoded()) {
      // Nothing was sent yet: the worker answers with a plain error status instead.
      job.pipe->early_error =
          job.st.cancel_all.load() ? shutting_down() : from_status(gen.status(), "messages");
      return;
    }
    const ApiError e =
        job.st.cancel_all.load()
            ? shutting_down()
            : from_status(gen.status(), ep == Endpoint::kChat ? "messages" : "prompt");
    write(sse_event(e.to_json()));
    write(sse_done());
    return;
  }
  ChunkParts last;
  last.finish = finish_reason(gen->stop_reason);
  if (job.plan) {
    const ParsedReply parsed = parse_reply(*job.plan, job.req.tools, gen->text);
    if (!parsed.calls.empty()) {
      for (size_t i = 0; i < parsed.calls.size(); ++i) {
        ChunkParts p;
        p.tool_calls = Json::array({tool_call_delta_json(i, parsed.calls[i])});
        if (!write(sse_event(stream_chunk_json(ep, job.meta, p, usage)))) return;
      }
      last.finish = "tool_calls";
    } else if (job.plan->format == ToolFormat::kGeneric) {
      // The answer's rest (a broken envelope's raw text only when nothing was streamed).
      if ((parsed.error.empty() || sent == 0) && parsed.content.size() > sent &&
          !send_content(parsed.content.substr(sent))) {
        return;
      }
    } else if (gen->text.size() > sent && !send_content(gen->text.substr(sent))) {
      return;
    }
  }
  last.text_offset = offset;
  if (want_lps && !rest.empty()) last.logprobs = std::move(rest);
  if (!write(sse_event(stream_chunk_json(ep, job.meta, last, usage)))) return;
  if (usage && !write(sse_event(usage_chunk_json(ep, job.meta, usage_of(job, *gen))))) return;
  write(sse_done());
}

/// Drops the pipe's reader when the response (and its stream producer) goes away unrun.
struct ReaderGuard {
  std::shared_ptr<Pipe> pipe;
  ~ReaderGuard() { pipe->reader_gone.store(true); }
};

/// A streamed request with images (see Pipe): the generation starts on its own thread; an error
/// before the images are encoded is returned as a whole error response.
HttpResponse stream_with_images(const std::shared_ptr<Job>& job) {
  auto pipe = std::make_shared<Pipe>();
  job->pipe = pipe;
  std::thread([job] {
    stream(*job, *job->pipe);
    job->slot.release();
    job->pipe->finish();
  }).detach();
  {
    std::unique_lock<std::mutex> l(pipe->mu);
    pipe->cv.wait(l, [&] { return pipe->encoded || pipe->done; });
    if (!pipe->encoded && pipe->early_error) return send_error(*pipe->early_error);
  }
  HttpResponse res;
  res.content_type = "text/event-stream";
  res.headers = {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
  std::shared_ptr<ReaderGuard> guard(new ReaderGuard{pipe});  // no temporary to destroy
  res.stream = [pipe, guard](StreamWriter& sink) {
    // Sends what the generation wrote until it finishes (a client gone cancels it).
    for (;;) {
      std::deque<std::string> batch;
      bool fin = false;
      {
        std::unique_lock<std::mutex> l(pipe->mu);
        pipe->cv.wait(l, [&] { return !pipe->queue.empty() || pipe->done; });
        batch.swap(pipe->queue);
        fin = pipe->done;
      }
      for (const std::string& s : batch) {
        if (!pipe->reader_gone.load() && !sink.write(s)) pipe->reader_gone.store(true);
      }
      if (fin) break;
    }
    if (pipe->prompt_tokens >= 0) this_request().prompt_tokens = pipe->prompt_tokens;
    if (pipe->completion_tokens >= 0) this_request().completion_tokens = pipe->completion_tokens;
    this_request().client_closed = pipe->reader_gone.load();
  };
  return res;
}

}  // namespace

HttpResponse handle_completion(ServerState& st, HttpRequest& req, Endpoint endpoint) {
  const auto arrival = Clock::now();
  if (st.draining.load()) return send_error(shutting_down());
  auto parsed = endpoint == Endpoint::kChat
                    ? parse_chat_request(req.body, st.options.defaults, st.options.images)
                    : parse_completion_request(req.body, st.options.defaults);
  if (auto* e = std::get_if<ApiError>(&parsed)) return send_error(*e);
  // Any "model" means the one served (the reply names it), as llama-server does.
  CompletionRequest r = std::move(std::get<CompletionRequest>(parsed));
  auto resolved = resolve_model(st, r.model);
  if (auto* e = std::get_if<ApiError>(&resolved)) return send_error(*e);
  ModelRef ref = std::move(std::get<ModelRef>(resolved));
  Model& model = *ref.model;
  std::optional<ToolPlan> plan =
      endpoint == Endpoint::kChat ? plan_request(model, r) : std::nullopt;
  if (r.n_images > 0 && model.info().mmproj_path.empty()) {
    // A text model: the engine's own words ("... takes no images ..."), before any work.
    std::vector<Image> none = {Image::from_bytes({0})};
    auto refused = model.generate("", none, GenerationConfig{});
    return send_error(invalid_value(
        "messages", refused.ok() ? "this model takes no images" : refused.status().message()));
  }

  auto ids = prompt_ids(model, r);
  if (auto* e = std::get_if<ApiError>(&ids)) return send_error(*e);
  std::vector<int32_t> prompt = std::move(std::get<std::vector<int32_t>>(ids));
  this_request().prompt_tokens = static_cast<int64_t>(prompt.size());
  const int32_t n_ctx = model.info().n_ctx;
  const char* prompt_param = endpoint == Endpoint::kChat ? "messages" : "prompt";
  if (prompt.empty()) return send_error(invalid_value(prompt_param, "the prompt is empty."));
  if (static_cast<int64_t>(prompt.size()) >= n_ctx) {
    ApiError e = invalid_value(prompt_param, "the prompt is " + std::to_string(prompt.size()) +
                                                 " tokens but this server's context holds " +
                                                 std::to_string(n_ctx) +
                                                 " (prompt + at least one generated token).");
    e.code = "context_length_exceeded";
    return send_error(e);
  }
  // Huge or absent max_tokens: bounded by the room left in the context (finish "length").
  const int32_t room = n_ctx - static_cast<int32_t>(prompt.size());
  if (r.config.max_tokens < 0 || r.config.max_tokens > room) r.config.max_tokens = room;

  auto job = std::make_shared<Job>(Job{st, std::move(r), std::move(prompt), {}, {}, arrival});
  job->plan = std::move(plan);
  job->ref = std::move(ref);
  switch (st.admission.acquire(job->slot)) {
    case Admission::Outcome::kAdmitted: break;
    case Admission::Outcome::kQueueFull:
      return send_error(queue_full(st.admission.parallel(), st.admission.queue_capacity()));
    case Admission::Outcome::kClosed: return send_error(shutting_down());
  }
  st.metrics.add_prompt_tokens(static_cast<int64_t>(job->ids.size()));
  job->meta = {make_id(endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-"),
               static_cast<int64_t>(std::time(nullptr)), job->ref.id};

  if (!job->req.stream) return respond_whole(*job, req);
  if (job->req.n_images > 0) return stream_with_images(job);
  HttpResponse res;
  res.content_type = "text/event-stream";
  res.headers = {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
  // Runs on this worker thread right after we return (the slot is released with the job if the
  // producer never runs).
  res.stream = [job](StreamWriter& sink) {
    stream(*job, sink);
    this_request().client_closed = job->client_gone;  // this thread logs the request next
    job->slot.release();
  };
  return res;
}

HttpResponse handle_apply_template(ServerState& st, HttpRequest& req) {
  auto parsed = parse_chat_request(req.body, st.options.defaults, st.options.images);
  if (auto* e = std::get_if<ApiError>(&parsed)) return send_error(*e);
  CompletionRequest r = std::move(std::get<CompletionRequest>(parsed));
  auto ref = resolve_model(st, r.model);
  if (auto* e = std::get_if<ApiError>(&ref)) return send_error(*e);
  const Model& model = *std::get<ModelRef>(ref).model;
  plan_request(model, r);
  auto text = chat_prompt_text(model, r);
  if (auto* e = std::get_if<ApiError>(&text)) return send_error(*e);
  return json_response(200, dump(Json{{"prompt", std::get<std::string>(text)}}));
}

}  // namespace geniex::server
