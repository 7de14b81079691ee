// The chat page served at GET /: one self-contained HTML document (inline CSS and JS, no build
// step) that lists the model, keeps a conversation and streams replies from
// /v1/chat/completions with fetch() + a ReadableStream over the Server-Sent Events.
#pragma once

#include <string_view>

namespace geniex::server {

/// The page's HTML.
std::string_view chat_page_html();

}  // namespace geniex::server
