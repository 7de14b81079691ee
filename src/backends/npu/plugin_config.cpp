#include "backends/npu/plugin_config.h"

namespace geniex::backends::npu {

std::string config_for_plugin(std::string_view config, std::string_view plugin) {
  std::string out;
  while (!config.empty()) {
    const size_t end = config.find(';');
    std::string_view item = config.substr(0, end);
    config = end == std::string_view::npos ? std::string_view{} : config.substr(end + 1);
    if (item.find_first_not_of(' ') == std::string_view::npos) continue;
    const size_t colon = item.substr(0, item.find('=')).find(':');
    if (colon != std::string_view::npos) {
      std::string_view scope = item.substr(0, colon);
      while (!scope.empty() && scope.front() == ' ') scope.remove_prefix(1);
      while (!scope.empty() && scope.back() == ' ') scope.remove_suffix(1);
      if (scope != plugin) continue;
      item = item.substr(colon + 1);
    }
    if (!out.empty()) out += ';';
    out += item;
  }
  return out;
}

}  // namespace geniex::backends::npu
