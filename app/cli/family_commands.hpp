// family_commands.hpp: `attnscope-cli model info|trace|generate|bench` on a
// Llama, Mistral, Qwen2, Qwen3 or Gemma 3 folder (core::FamilyModel), with
// the JSON contract of the GPT-2 commands. model_commands.cpp sends a path
// here when its config.json names a model_type other than "gpt2".
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "attnscope/model/family_config.hpp"
#include "model_commands.hpp"

namespace attnscope::cli {

using core::family_model_type;  // attnscope/model/family_config.hpp

int run_family_info(const std::filesystem::path& path);
int run_family_trace(const ModelCommands& c, const std::filesystem::path& path);
int run_family_generate(const ModelCommands& c, const std::filesystem::path& path);
int run_family_bench(const ModelCommands& c, const std::filesystem::path& path);

}  // namespace attnscope::cli
