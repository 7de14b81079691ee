// One config string for every NPU plugin: items without a scope go to all of them, items with a
// scope only to the plugin of that name. Each plugin still refuses keys it does not know.
#pragma once

#include <string>
#include <string_view>

namespace geniex::backends::npu {

/// The part of `config` ("key=value;..." items) meant for the plugin whose table names it
/// `plugin` (e.g. "ref", "qnn-htp"): an item `key=value` goes to every plugin; an item
/// `NAME:key=value` (the scope before the key, the value may hold ':') goes only to the plugin
/// called NAME, without its scope. Empty items are dropped; the order is kept.
std::string config_for_plugin(std::string_view config, std::string_view plugin);

}  // namespace geniex::backends::npu
