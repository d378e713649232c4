// fuzz_hub_headers.cpp: response header lines as a server may send them
// (status lines, names, ETags, sizes, Content-Range), one line per input line.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "attnscope/hub/protocol.hpp"

namespace hub = attnscope::core::hub;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  hub::ResponseHead head;
  while (!rest.empty()) {
    const std::size_t end = rest.find('\n');
    const std::string_view line =
        rest.substr(0, end == std::string_view::npos ? rest.size() : end + 1);
    hub::add_header_line(line, head);
    (void)hub::parse_content_range(line);
    rest.remove_prefix(line.size());
  }
  const hub::FileMeta m = hub::file_meta(head);
  (void)m.lfs();
  if (const auto range = head.get("content-range")) (void)hub::parse_content_range(*range);
  return 0;
}
