// fuzz_hub_listing.cpp: the Hub API's file list (JSON: "sha", "siblings")
// and the checks every listed name goes through before it is a path.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "attnscope/base/errors.hpp"
#include "attnscope/hub/cache.hpp"
#include "attnscope/hub/protocol.hpp"

namespace core = attnscope::core;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const core::hub::RepoListing l = core::hub::parse_repo_listing(bytes, "fuzz");
    for (const auto& name : l.files)
      if (!core::hub::unsafe_file_name(name)) {
        (void)core::hub::is_model_file(name);
        (void)core::hub::blob_link_target(name, l.commit);
      }
  } catch (const core::ParseError&) {
  }
  try {
    (void)core::hub::parse_repo_ref(bytes);
  } catch (const core::ParseError&) {
  }
  return 0;
}
