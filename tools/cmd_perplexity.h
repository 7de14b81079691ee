// `geniex perplexity`: perplexity and KL divergence against llama.cpp base files.
#pragma once

#include "command.h"

namespace geniex::cli {

Command register_perplexity(CLI::App& parent);

}  // namespace geniex::cli
