// pull_command.hpp: `attnscope-cli model pull REPO[@REV] [--endpoint URL]`:
// a model from the Hugging Face Hub into its cache (core's hub room).
#pragma once

#include <string>

namespace attnscope::cli {

// Pulls `repo_ref` ("org/name[@revision]"), drawing progress on stderr (one
// line redrawn on a terminal, a line per file otherwise) and printing the
// snapshot folder on stdout. Returns 0, or 130 after Ctrl+C (the partial
// file kept); throws core::ParseError with the pull's error otherwise.
int run_model_pull(const std::string& repo_ref, const std::string& endpoint);

}  // namespace attnscope::cli
