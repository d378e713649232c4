// model_commands.hpp: `attnscope-cli model ...`: GPT-2-family checkpoints
// (Hugging Face folders, .safetensors, the book's .pth) on text; info,
// trace, generate and bench also take Llama, Mistral, Qwen2/3 and Gemma 3
// folders (family_commands.hpp).
//
//   model info MODEL
//   model list
//   model pull REPO[@REV] [--endpoint URL]
//   model trace MODEL (--text T | --text-file F | --ids 1,2,3) [--config F]
//               [--layers L,..] [--heads H,..] [--stages ID,..] [--format json|text]
//               [--keep-last]
//   model generate MODEL (--text T | ...) --tokens N [--temperature X] [--top-k K]
//                  [--seed S] [--format text|json]
//   model lens MODEL (--text T | ...) [--position P] [--top K] [--format json|text]
//   model export MODEL (--text T | ...) [selection] --format npy|csv|json|svg --out DIR
//   model bench MODEL --tokens T [--repeat N] [--append]
//   model patterns MODEL (--text T | ...) [--induction-n N] [--seed S]
//   model script MODEL (--text T | ...) [--layer L] [--head H] [--top K]
//   model compare A B (--text T | ...) [--config F] [--config-b F] [--layer L]
//                 [--head H] [--format json|text]
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "export_command.hpp"
#include "run_flags/run_flags.hpp"

namespace attnscope::cli {

// `model compare`: two checkpoints of one shape on the same token ids.
struct ModelCompareFlags {
  CLI::App* cmd = nullptr;
  run_flags::ModelFlags model;          // A (MODEL), its --config, --ids, --keep-last
  run_flags::TextFlags text;            // --text, --text-file
  std::string b_path;                   // B
  std::optional<std::string> b_config;  // --config-b
  std::optional<int> layer, head;       // --layer, --head (default: every one)
  std::string format = "json";
};

// What the model subcommands' flags write into (CLI11 holds pointers to
// these fields: keep the struct where it was declared).
struct ModelCommands {
  CLI::App* cmd = nullptr;
  CLI::App *info = nullptr, *list = nullptr, *trace = nullptr, *generate = nullptr, *exp = nullptr,
           *bench = nullptr, *patterns = nullptr, *lens = nullptr, *script = nullptr,
           *pull = nullptr;
  std::string pull_ref;             // pull: org/name[@revision]
  std::string endpoint;             // pull: --endpoint (default: $HF_ENDPOINT, else huggingface.co)
  run_flags::ModelFlags model;      // MODEL (PATH for info), --config, --ids, --keep-last
  run_flags::TextFlags text;        // --text, --text-file: the text the model reads
  int next_at = -1;                 // --next-at: next tokens after this token (-1: last)
  std::vector<int> layers, heads;   // --layers, --heads
  std::vector<std::string> stages;  // --stages
  std::string format = "json";      // trace: json|text; generate: text|json
  std::string generate_format = "text";
  int tokens = 0;       // generate: new tokens; bench: T
  int repeat = 5;       // bench
  bool append = false;  // bench: time appending one token instead

  int induction_n = 50;    // patterns: length of the repeated random sequence
  std::uint64_t seed = 0;  // patterns: seed of its tokens

  double temperature = 0.0;         // generate: 0 is greedy
  int top_k = 0;                    // generate: 0 is no cut
  std::uint64_t sample_seed = 123;  // generate: torch.manual_seed before generate()
  int position = -1;                // lens: the token whose next token is read (-1: last)
  int top = 5;                      // lens: tokens per layer; script: next tokens printed
  int layer = 0, head = 0;          // script: the head whose weights the script prints
  ExportOptions exp_options;
  ModelCompareFlags compare;
};

void add_model_commands(CLI::App& app, ModelCommands& c);
// Runs the model subcommand that was parsed; nullopt when none was. Throws
// core::ParseError / core::FileError for bad input (main prints them).
std::optional<int> run_model_commands(const ModelCommands& c);

}  // namespace attnscope::cli
