// replay_main.cpp: a main() for a libFuzzer target without libFuzzer. Feeds
// every file named on the command line (every regular file of a folder, in
// name order) to the target's LLVMFuzzerTestOneInput, one after another.
//
// The normal build links each fuzz target with this file, and CTest replays
// the seed corpus and fuzz/regressions/ through it (fuzz/CMakeLists.txt), so
// `make test` reruns every input that ever crashed a target, with gcc, with
// and without the sanitizers. A crash, a sanitizer report or an escaping
// exception ends the process and fails the test; the last "replaying" line
// names the input.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " FILE_OR_FOLDER...\n";
    return 2;
  }
  std::vector<fs::path> inputs;
  for (int a = 1; a < argc; ++a) {
    const fs::path p = argv[a];
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      inputs.insert(inputs.end(), files.begin(), files.end());
    } else if (fs::is_regular_file(p, ec)) {
      inputs.push_back(p);
    } else {
      std::cerr << "error: " << p.string() << " is neither a file nor a folder\n";
      return 2;
    }
  }
  for (const fs::path& p : inputs) {
    std::cout << "replaying " << p.string() << std::endl;  // flushed: names the input that dies
    std::ifstream in(p, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::cerr << "error: cannot read " << p.string() << "\n";
      return 2;
    }
    // libFuzzer hands the target a buffer of exactly `size` bytes; so do we,
    // so that AddressSanitizer sees a read past the end.
    std::vector<std::uint8_t> buf(bytes.begin(), bytes.end());
    LLVMFuzzerTestOneInput(buf.data(), buf.size());
  }
  std::cout << "replayed " << inputs.size() << (inputs.size() == 1 ? " input" : " inputs")
            << " without a crash\n";
  return 0;
}
