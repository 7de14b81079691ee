// `geniex bench`: prefill and decode speed of one model, like llama-bench's pp and tg tests.
#pragma once

#include "command.h"

namespace geniex::cli {

Command register_bench(CLI::App& parent);

}  // namespace geniex::cli
