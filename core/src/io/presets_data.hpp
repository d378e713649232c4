// presets_data.hpp: presets compiled in from assets/presets/*.json by CMake.
#pragma once

#include <cstddef>

namespace attnscope::core {

struct EmbeddedPreset {
  const char* name;  // file name without .json
  const char* json;  // the file's text
};

extern const EmbeddedPreset kEmbeddedPresets[];
extern const std::size_t kEmbeddedPresetCount;

}  // namespace attnscope::core
