// cache.hpp: the Hugging Face cache on disk, laid out as huggingface_hub
// lays it out, so that a model attnscope pulls is found by `transformers`
// and one the Python tools pulled is found by attnscope:
//
//   <root>/models--<org>--<name>/
//     blobs/<etag>                 each file's bytes, named by its ETag
//     blobs/<etag>.incomplete      a download under way, resumed by Range
//     snapshots/<commit>/<file>    relative symlinks: ../../blobs/<etag>
//     refs/<revision>              the commit a branch or tag points at
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace attnscope::core::hub {

// The cache's root: $HF_HUB_CACHE, else $HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
std::filesystem::path cache_root();

// A model and revision as the user names them: "org/name[@revision]".
struct RepoRef {
  std::string repo;               // "openai-community/gpt2" or "gpt2"
  std::string revision = "main";  // a branch, tag or commit
};
// Parses "org/name[@revision]". Throws ParseError saying what a repo id
// looks like when `text` is not one (empty parts, "..", characters other
// than letters, digits, '-', '_', '.').
RepoRef parse_repo_ref(std::string_view text);

// "models--org--name": the repo's folder under the root.
std::string repo_folder_name(std::string_view repo);

// Why a file name from the server must not become a path in the cache
// (absolute, "..", ".", empty segments, a backslash, a NUL or control
// character), or nullopt when it is a safe relative path.
std::optional<std::string> unsafe_file_name(std::string_view name);

// The symlink target from snapshots/<commit>/<file> to blobs/<etag>:
// "../../blobs/<etag>", one more "../" for each folder in `file`.
std::string blob_link_target(std::string_view file, std::string_view etag);

// Whether a pull fetches this file of a repo: config.json, the safetensors
// weights (or shards and their index), the tokenizer files, the generation
// config; never other weights formats (.bin, .h5, .onnx, .gguf, .msgpack, .ot).
// Top level only: locate_model reads a model folder's top level, and a shard
// index naming a file in a folder is refused, so no file in a subfolder is
// ever needed (blob_link_target's depth serves trees other tools made).
bool is_model_file(std::string_view name);

// Whether `s` is a full commit hash (40 lowercase hex digits).
bool is_commit_hash(std::string_view s);

// The commit refs/<revision> of the repo folder `storage` names, or nullopt.
// A revision that is a commit hash is its own commit.
std::optional<std::string> read_ref(const std::filesystem::path& storage,
                                    std::string_view revision);

// The total size of the files in `folder` (symlinks followed; 0 when missing).
std::uint64_t folder_bytes(const std::filesystem::path& folder);

}  // namespace attnscope::core::hub
