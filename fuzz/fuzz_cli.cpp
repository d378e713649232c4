// fuzz_cli.cpp: attnscope-cli's argument handling. The input is split at
// newlines into argv. `bench` and `export` are left out (they time large runs
// and write files), and so are paths outside a scratch folder; what remains
// is `trace` and the top-level flags with every option and value the
// fuzzer invents. Exit code 2 with a message is the expected outcome.
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

int attnscope_cli_main(int argc, char** argv);

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args{"attnscope-cli"};
  std::string current;
  for (std::size_t i = 0; i < size && args.size() < 32; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\n') {
      args.push_back(current);
      current.clear();
    } else if (c != '\0') {
      current += c;
    }
  }
  args.push_back(current);
  for (const auto& a : args) {
    if (a == "bench" || a == "export") return 0;
    // Only files the seed corpus names (and nothing that blocks: '-' is stdin).
    if (a == "-" || (a.find('/') != std::string::npos && a.rfind("fuzz/corpus/", 0) != 0)) return 0;
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::ostringstream out, err;  // keep the fuzzer's log readable
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  try {
    attnscope_cli_main(static_cast<int>(args.size()), argv.data());
  } catch (...) {
    std::cout.rdbuf(old_out);
    std::cerr.rdbuf(old_err);
    throw;  // an exception escaping the CLI is a bug: let the fuzzer report it
  }
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  return 0;
}
