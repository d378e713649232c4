// attnscope-cli: the engine on the command line, no window, no GL.
//
//   attnscope-cli trace  [--config FILE|-] [--preset NAME] [run flags] [--format json|text]
//   attnscope-cli export [--config FILE|-] [--preset NAME] [run flags]
//                        --format svg|csv|npy|json --out DIR [--stage ID] [--head H]
//                        [--row-scale] [--decimals N]
//   attnscope-cli code   [--config FILE|-] [--preset NAME] [run flags]
//   attnscope-cli bench  --variant V --tokens T --d-in N --d-out N --heads H --dropout P
//                        [--seed S] [--repeat K]
//   attnscope-cli model info PATH   (a GPT-2 folder or a .safetensors file)
//   attnscope-cli tokenize [--vocab PATH] (--text TEXT | --text-file FILE|-) [--jsonl]
//                          [--no-special]
//   attnscope-cli kv-memory [--model ID | shape flags] [--context N] [--dtype D]
//                           [--format text|json]
//   attnscope-cli trace ... --cache-step N   (one step of generating with the KV cache)
//
// Run flags: --variant --d-out --heads --dropout --seed --qkv-bias --eval,
// --kv-groups --window --latent-dim --rope --rope-theta, --memory-text (cross),
// plus --embeddings FILE (CSV/NPY/JSON) or --random T,D [--input-seed S]
// or --text TEXT | --text-file FILE [--d-in N] [--embed-seed S] [--positions N],
// and --weights FILE|DIR (repeatable).
//
// Every bad input ends with exit code 2, nothing on stdout and one line on
// stderr that starts with "error: " and names the problem.
//
// Sections
//   1. run options and resolving them (config file, flags, imports)
//   2. trace
//   3. export
//   4. bench
//   5. code
//   6. model info
//   7. tokenize
//   8. the commands and main
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "attnscope/analysis/diagnose.hpp"
#include "attnscope/analysis/memory.hpp"
#include "attnscope/attention/attention.hpp"
#include "attnscope/attention/embedding.hpp"
#include "attnscope/attention/modern.hpp"
#include "attnscope/book/pytorch_code.hpp"
#include "attnscope/formats/files.hpp"
#include "attnscope/formats/formats.hpp"
#include "attnscope/formats/safetensors.hpp"
#include "attnscope/io/io.hpp"
#include "attnscope/io/weights.hpp"
#include "attnscope/model/gpt2_config.hpp"
#include "attnscope/text/hf_tokenizer.hpp"
#include "attnscope/text/tokenizer.hpp"
#include "export_command.hpp"
#include "figure/stage_figure.hpp"
#include "figure/svg.hpp"
#include "kv_memory_command.hpp"
#include "model_commands.hpp"
#include "run_flags/run_flags.hpp"

namespace core = attnscope::core;
namespace figure = attnscope::figure;
namespace fs = std::filesystem;
namespace run_flags = attnscope::run_flags;

namespace {

using attnscope::cli::ExportOptions;
using attnscope::cli::run_export;
using run_flags::kExitBadInput;

// ---------------------------------------------------------------------------
// 1. Run options

// The flags that describe one run (run_flags/run_flags.hpp), each over the
// config file's field, plus the CLI's own imports.
struct RunOptions {
  run_flags::RunFlags flags;
  std::optional<std::string> embeddings;   // --embeddings FILE
  std::vector<std::string> weights;        // --weights FILE|DIR, repeatable
  run_flags::TextFlags text;               // --text/--text-file and the embedding flags
  std::optional<std::string> memory_text;  // --memory-text: cross-attention's second sequence
};

void add_run_options(CLI::App& cmd, RunOptions& o) {
  run_flags::add_run_flags(cmd, o.flags);
  cmd.add_option("--embeddings", o.embeddings,
                 "token embeddings from a CSV, NPY or JSON file (docs/file-formats.md)");
  cmd.add_option("--weights", o.weights,
                 "explicit weights instead of seeded ones: a JSON file, a .npy named after its "
                 "tensor, or a folder of them; repeatable (docs/file-formats.md)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run_flags::add_text_flags(cmd, o.text, run_flags::Program::Cli);
  cmd.add_option("--memory-text", o.memory_text,
                 "cross: the second sequence (keys and values) from a sentence, embedded as "
                 "--text is (--d-in, --embed-seed)");
}

// What a resolved run needs: config, inputs and maybe explicit weights.
struct Run {
  core::Config config;
  core::Inputs inputs;
  std::optional<core::Parameters> weights;   // set when --weights was given
  std::optional<core::RandomInputs> random;  // set when --random drew the inputs
  std::optional<core::TextInputs> text;      // set when --text / --text-file gave them
};

// --text / --text-file: the tokens and embedding settings they give, after
// refusing every other source of inputs; nullopt without them. Throws
// core::ParseError.
std::optional<core::TextInputs> text_inputs(const RunOptions& opts, const core::RunSpec& spec) {
  const run_flags::TextFlags& t = opts.text;
  if (!t.given() && !opts.memory_text) {
    for (const auto& [given, flag] : {std::pair{t.d_in.has_value(), "--d-in"},
                                      std::pair{t.embed_seed.has_value(), "--embed-seed"},
                                      std::pair{t.positions.has_value(), "--positions"}})
      if (given)
        throw core::ParseError(std::string(flag) +
                               " shapes the embeddings of --text: add --text TEXT (or "
                               "--text-file FILE), or drop " +
                               flag);
    return std::nullopt;
  }
  if (!t.given()) return std::nullopt;  // only --memory-text: memory_inputs reads the flags
  const std::string name = t.flag();
  if (t.text && t.text_file)
    throw core::ParseError("--text and --text-file both give the text: keep one of them");
  const auto both = [&](const std::string& other) {
    return core::ParseError(name + " and " + other + " both give the inputs: keep one of them");
  };
  if (opts.flags.preset) throw both("--preset");
  if (opts.embeddings) throw both("--embeddings");
  if (opts.flags.random) throw both("--random");
  if (spec.preset || spec.tokens || spec.embeddings)
    throw core::ParseError(name + " and the config file's " +
                           (spec.preset ? "preset" : "tokens/embeddings") +
                           " both give the inputs: remove them from the file, or drop " + name);
  const int d_in = t.d_in.value_or(core::kDefaultTextDim);
  if (d_in < 1 || d_in > core::kMaxDim)
    throw core::ParseError("--d-in (" + std::to_string(d_in) + ") must be between 1 and " +
                           std::to_string(core::kMaxDim));
  const int positions = t.positions.value_or(0);
  if (positions < 0)
    throw core::ParseError("--positions (" + std::to_string(positions) +
                           ") must be 0 (no positional embedding) or the context length");
  const std::uint64_t seed =
      t.embed_seed ? core::parse_seed(*t.embed_seed, "--embed-seed") : core::kDefaultEmbedSeed;
  const std::string text = t.read();
  core::TextInputs typed = core::tokenize_text(text, d_in, seed, positions);
  const std::size_t count = typed.ids.size();
  if (positions > 0 && count > static_cast<std::size_t>(positions))
    throw core::ParseError(name + " gives " + std::to_string(count) + " tokens but --positions " +
                           std::to_string(positions) + " has room for " +
                           std::to_string(positions) + ": raise --positions to at least " +
                           std::to_string(count) + ", or shorten the text");
  return typed;
}

// --memory-text: cross-attention's second sequence, embedded as --text is
// (the same nn.Embedding under --embed-seed, --d-in wide, no positions: the
// encoder's sentence has positions of its own). Throws core::ParseError.
void add_memory_text(const RunOptions& opts, core::RunSpec& spec) {
  if (!opts.memory_text) return;
  if (spec.memory_embeddings)
    throw core::ParseError(
        "--memory-text and the config file's memory_embeddings both give the second sequence: "
        "keep one of them");
  const run_flags::TextFlags& t = opts.text;
  const int d_in = t.d_in.value_or(core::kDefaultTextDim);
  if (d_in < 1 || d_in > core::kMaxDim)
    throw core::ParseError("--d-in (" + std::to_string(d_in) + ") must be between 1 and " +
                           std::to_string(core::kMaxDim));
  const std::uint64_t seed =
      t.embed_seed ? core::parse_seed(*t.embed_seed, "--embed-seed") : core::kDefaultEmbedSeed;
  core::Inputs memory =
      core::chapter2_inputs(core::tokenize_text(*opts.memory_text, d_in, seed, 0));
  if (memory.tokens.empty())
    throw core::ParseError("--memory-text has no tokens: give the second sentence some text");
  spec.memory_tokens = std::move(memory.tokens);
  spec.memory_embeddings = std::move(memory.embeddings);
}

// Config file first, then the flags on top, then the imports; throws core::ParseError.
Run resolve_run(const RunOptions& opts) {
  const run_flags::RunFlags& o = opts.flags;
  core::RunSpec spec;
  std::optional<core::RandomInputs> random_drawn;
  const std::optional<std::string> config_path = o.config_path();
  if (config_path && *config_path == "-" && opts.text.text_file == "-")
    throw core::ParseError(
        "--text-file - and --config - both read standard input: give one of them a file");
  if (config_path) {
    const std::string source = *config_path == "-" ? "standard input" : *config_path;
    spec = core::parse_run_spec(core::read_text_file(*config_path), source);
  }
  spec = core::merge(std::move(spec), o.spec());
  std::optional<core::TextInputs> typed = text_inputs(opts, spec);
  if (typed) {
    core::Inputs embedded = core::chapter2_inputs(*typed);
    spec.tokens = std::move(embedded.tokens);
    spec.embeddings = std::move(embedded.embeddings);
  }

  if (o.input_seed && !o.random)
    throw core::ParseError(
        "--input-seed is the seed of --random's inputs: add --random T,D "
        "(e.g. --random 512,64), or drop --input-seed");
  if (o.random) {
    if (o.preset)
      throw core::ParseError("--random and --preset both give the inputs: keep one of them");
    if (opts.embeddings)
      throw core::ParseError("--random and --embeddings both give the inputs: keep one of them");
    if (spec.preset || spec.tokens || spec.embeddings)
      throw core::ParseError("--random and the config file's " +
                             std::string(spec.preset ? "preset" : "tokens/embeddings") +
                             " both give the inputs: remove them from the file, or drop --random");
    const auto [T, D] = core::parse_random_shape(*o.random);
    const std::uint64_t seed = o.parsed_input_seed().value_or(core::kDefaultInputSeed);
    random_drawn = core::RandomInputs{T, D, seed};
    core::Inputs random = core::random_inputs(T, D, seed);
    spec.tokens = std::move(random.tokens);
    spec.embeddings = std::move(random.embeddings);
  }

  if (opts.embeddings) {
    if (opts.embeddings->empty()) throw core::ParseError("--embeddings needs a file path");
    const core::ImportedEmbeddings imported = core::read_embeddings_file(*opts.embeddings);
    // The tokens the file meets: those the config names, or its preset's.
    std::vector<std::string> current;
    if (spec.tokens) {
      current = *spec.tokens;
    } else if (spec.preset) {
      if (const auto preset = core::find_preset(*spec.preset)) current = preset->tokens;
    }
    const core::Inputs inputs = core::apply_embeddings(imported, current, *opts.embeddings);
    spec.embeddings = inputs.embeddings;
    spec.tokens = inputs.tokens;
  }
  // Only a run described by flags alone defaults to the book's example; a
  // config file must say what it runs on.
  add_memory_text(opts, spec);
  if (!config_path && !spec.preset && !spec.embeddings)
    spec.preset =
        spec.variant == core::Variant::Cross && !spec.memory_embeddings ? "translate" : "book";
  Run run;
  core::resolve(spec, run.config, run.inputs);
  run.random = random_drawn;
  run.text = std::move(typed);

  if (!opts.weights.empty()) {
    core::WeightSet set;
    for (const auto& path : opts.weights) {
      if (path.empty()) throw core::ParseError("--weights needs a file or folder path");
      core::merge_weights(set, core::read_weights(path));
    }
    run.weights = core::parameters_from_weights(set, run.config,
                                                static_cast<int>(run.inputs.embeddings.cols()));
  }
  return run;
}

// Refuses a run whose trace would not fit in the memory the system has left:
// past that Linux does not fail an allocation but kills the process later.
void check_memory(const core::Config& config, const core::Inputs& inputs) {
  if (std::string problem = core::memory_problem(config, inputs); !problem.empty())
    throw core::ParseError(problem);
}

// A run whose values left float32's range is still printed (its NaN and inf
// are what PyTorch computes too), with one "warning: " line on stderr saying
// where the first unexpected NaN/inf appeared and why (core/diagnose.hpp).
core::Trace run_trace(const Run& run) {
  check_memory(run.config, run.inputs);
  core::Trace trace = run.weights
                          ? core::run_with_explicit_parameters(run.config, run.inputs, *run.weights)
                          : core::run_attention(run.config, run.inputs);
  if (const auto found = core::find_nonfinite(trace))
    std::cerr << "warning: " << found->message() << "\n";
  return trace;
}

// ---------------------------------------------------------------------------
// 2. trace

// `trace --cache-step N`: step N of generating token by token (eval mode).
core::Trace cache_step_trace(const Run& run, int step) {
  if (run.weights) throw core::ParseError("--cache-step runs the seeded module: drop --weights");
  if (std::string problem = core::validate_cache_step(run.config, run.inputs, step);
      !problem.empty())
    throw core::ParseError(problem);
  check_memory(run.config, run.inputs);
  return core::run_cache_step(run.config, run.inputs, step);
}

int write_trace(const core::Trace& trace, bool text_format) {
  if (text_format)
    core::write_trace_text(trace, std::cout);
  else
    core::write_trace_json(trace, std::cout);
  std::cout.flush();
  return std::cout ? 0 : 1;
}

// ---------------------------------------------------------------------------
// 4. bench

// Options of `bench`: a random run of the given size.
struct BenchOptions {
  std::string variant = "multihead";
  int tokens = 1024;
  int d_in = 768;
  int d_out = 768;
  int heads = 12;
  double dropout = 0.1;
  std::string seed = "123";
  int repeat = 5;
  bool eval = false;
  bool cold = false;
  // The classes after chapter 3:
  int kv_groups = 1;
  std::optional<int> window, latent_dim, cache_step;
  bool rope = false;
};

void add_bench_options(CLI::App& cmd, BenchOptions& o) {
  cmd.add_option("--variant", o.variant, "variant to time")->capture_default_str();
  cmd.add_option("--tokens", o.tokens, "T, the number of tokens")->capture_default_str();
  cmd.add_option("--d-in", o.d_in, "embedding width")->capture_default_str();
  cmd.add_option("--d-out", o.d_out, "projection width")->capture_default_str();
  cmd.add_option("--heads", o.heads, "number of heads")->capture_default_str();
  cmd.add_option("--dropout", o.dropout, "dropout probability")->capture_default_str();
  cmd.add_option("--seed", o.seed, "seed for the inputs and the module")->capture_default_str();
  cmd.add_option("--repeat", o.repeat, "timed runs after one warm-up")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd.add_flag("--eval", o.eval, "eval mode: dropout off");
  cmd.add_flag("--cold", o.cold,
               "rebuild the module's parameters in every run (default: reuse them, as the app "
               "does when a recompute keeps the model's shape and seed)");
  cmd.add_option("--kv-groups", o.kv_groups, "gqa: K/V heads (num_kv_groups)");
  cmd.add_option("--window", o.window, "swa: the sliding window");
  cmd.add_option("--latent-dim", o.latent_dim, "mla: the latent's width");
  cmd.add_flag("--rope", o.rope, "rotate queries and keys (multihead, gqa, swa)");
  cmd.add_option("--cache-step", o.cache_step,
                 "time one step of generating with the KV cache instead: the new row at "
                 "position N (from 0; the steps before it are run first, untimed)");
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
}

double median_of(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
}

// Times one step of generating with the KV cache: the module is fed rows
// 0 .. N-1 (untimed), then each timed run steps row N on a copy of it.
int run_cache_bench(const BenchOptions& o, const core::Config& config, const core::Inputs& inputs) {
  const int n = *o.cache_step;
  if (const std::string problem = core::validate_cache_step(config, inputs, n); !problem.empty())
    throw core::ParseError(problem);
  const core::modern::Config m = core::modern_config_of(config);
  core::modern::CachedModule before(m, o.d_in, o.tokens);
  for (int t = 0; t < n; ++t) before.step(inputs.embeddings.row(t));
  using Clock = std::chrono::steady_clock;
  std::vector<double> ms;
  std::size_t bytes = 0;
  for (int k = 0; k <= o.repeat; ++k) {
    core::modern::CachedModule module = before;
    const auto start = Clock::now();
    const core::modern::CacheStep step = module.step(inputs.embeddings.row(n));
    const auto stop = Clock::now();
    bytes = step.cache_bytes;
    if (k > 0) ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
  }
  std::printf(
      "bench: %s T=%d d_in=%d d_out=%d heads=%d, one cached step at position %d, "
      "cache %zu bytes\n",
      o.variant.c_str(), o.tokens, o.d_in, o.d_out, o.heads, n, bytes);
  std::printf("median_ms=%.3f\n", median_of(ms));
  return 0;
}

// Times K full traces (every stage kept) after one warm-up run.
int run_bench(const BenchOptions& o) {
  core::keep_freed_memory_for_reuse();  // as the app does: recomputes reuse warm pages
  core::Config config;
  const auto variant = core::parse_variant(o.variant);
  if (!variant) throw core::ParseError("unknown variant '" + o.variant + "'");
  config.variant = *variant;
  config.d_out = o.d_out;
  config.num_heads = o.heads;
  config.dropout = o.dropout;
  config.seed = core::parse_seed(o.seed);
  config.training = !o.eval;
  config.num_kv_groups = o.kv_groups;
  config.window = o.window;
  config.latent_dim = o.latent_dim;
  config.rope = o.rope;

  core::Inputs inputs;
  if (o.tokens < 1 || o.tokens > core::kMaxTokens || o.d_in < 1 || o.d_in > core::kMaxDim)
    throw core::ParseError("--tokens and --d-in must be between 1 and 4096");
  inputs.embeddings.resize(o.tokens, o.d_in);
  core::TorchGenerator input_gen(config.seed);  // torch.rand(T, d_in) from the seed
  input_gen.fill_uniform(inputs.embeddings, 0.0f, 1.0f);
  for (int t = 0; t < o.tokens; ++t) inputs.tokens.push_back("t" + std::to_string(t));
  if (const auto problem = core::validate(config, inputs); !problem.empty())
    throw core::ParseError(problem);

  check_memory(config, inputs);
  if (o.cache_step) return run_cache_bench(o, config, inputs);

  using Clock = std::chrono::steady_clock;
  core::ParameterCache cache;  // filled by the warm-up run
  std::vector<double> ms;
  std::size_t stages = 0;
  for (int k = 0; k <= o.repeat; ++k) {
    const auto start = Clock::now();
    const core::Trace trace =
        o.cold ? core::run_attention(config, inputs) : core::run_attention(config, inputs, cache);
    const auto stop = Clock::now();
    stages = trace.stages.size();
    if (k > 0) ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
  }
  std::sort(ms.begin(), ms.end());
  const double median =
      ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  std::printf("bench: %s T=%d d_in=%d d_out=%d heads=%d dropout=%g %s, %zu stages kept, %s\n",
              o.variant.c_str(), o.tokens, o.d_in, o.d_out, o.heads, o.dropout,
              o.eval ? "eval" : "training", stages,
              o.cold ? "parameters rebuilt every run" : "parameters reused after the warm-up");
  std::printf("runs=%d min_ms=%.3f median_ms=%.3f max_ms=%.3f peak_rss_mb=%.1f\n", o.repeat,
              ms.front(), median, ms.back(), peak_rss_mb());
  std::printf("median_ms=%.3f\n", median);
  return 0;
}

// ---------------------------------------------------------------------------
// 5. code

// Prints the run as one self-contained PyTorch script (core/pytorch_code.hpp):
// the book's class, the inputs, torch.manual_seed, the construction, the
// imported weights if any, the forward pass and print() of its output.
int run_code(const Run& run) {
  const core::Parameters* weights = run.weights ? &*run.weights : nullptr;
  // Random inputs as the two lines that draw them, a text's as chapter 2's
  // embedding layers, not T x D numbers.
  // Cross-attention's second sequence is written as a literal, with the inputs.
  const bool cross = run.config.variant == core::Variant::Cross;
  std::cout << (run.random && !cross ? core::pytorch_script(run.config, *run.random, weights)
                : run.text && !cross ? core::pytorch_script(run.config, *run.text, weights)
                                     : core::pytorch_script(run.config, run.inputs, weights));
  std::cout.flush();
  return std::cout ? 0 : 1;
}

// ---------------------------------------------------------------------------
// 7. tokenize

struct TokenizeOptions {
  std::optional<std::string> vocab;      // --vocab PATH (default: assets/gpt2)
  std::optional<std::string> text;       // --text TEXT
  std::optional<std::string> text_file;  // --text-file FILE|-
  bool jsonl = false;                    // --jsonl: one JSON string in, one object out, per line
  bool no_special = false;               // --no-special: special tokens read as text, no BOS
};

// The tokens of the text as one line of JSON (docs/file-formats.md), by
// GPT-2's tokenizer or a tokenizer.json (a file or a folder holding one).
int run_tokenize(const TokenizeOptions& o) {
  if (o.text.has_value() == o.text_file.has_value())
    throw core::ParseError("tokenize needs exactly one of --text TEXT and --text-file FILE");
  const std::string text = o.text ? *o.text : core::read_text_file(*o.text_file);
  const std::string source = o.text ? std::string("--text") : *o.text_file;
  std::optional<core::HfTokenizer> hf;
  std::optional<core::Gpt2Tokenizer> loaded;
  if (o.vocab && core::HfTokenizer::is_tokenizer_json(*o.vocab)) {
    try {
      hf = core::HfTokenizer::load(*o.vocab);
    } catch (const core::ParseError&) {
      // A Hugging Face GPT-2 folder's tokenizer.json (ByteLevel with GPT-2's
      // own pattern) is not read; its vocab.json + merges.txt are. Without
      // them the refusal of the tokenizer.json stands.
      const std::exception_ptr refusal = std::current_exception();
      if (!std::filesystem::is_directory(*o.vocab)) throw;
      try {
        loaded = core::Gpt2Tokenizer::load_dir(*o.vocab);
      } catch (const core::ParseError&) {
        std::rethrow_exception(refusal);
      }
    }
  } else if (o.vocab) {
    loaded = core::Gpt2Tokenizer::load_dir(*o.vocab);
  }
  const core::Gpt2Tokenizer* tok =
      loaded ? &*loaded : (hf ? nullptr : &core::Gpt2Tokenizer::builtin());
  const auto encode = [&](const std::string& item) {
    if (hf) return hf->encode(item, core::HfEncodeOptions{.special = !o.no_special});
    return o.no_special ? tok->encode_ordinary(item) : tok->encode(item);
  };
  std::string out;
  if (o.jsonl) {
    int line = 0;
    for (const auto& item : core::parse_json_string_lines(text, source)) {
      ++line;
      try {
        out += core::tokens_json(encode(item)) + "\n";
      } catch (const core::ParseError& e) {
        throw core::ParseError(source + ": string " + std::to_string(line) + ": " + e.what());
      }
    }
  } else {
    out = core::tokens_json(encode(text)) + "\n";
  }
  std::cout << out;
  std::cout.flush();
  return std::cout ? 0 : 1;
}

// ---------------------------------------------------------------------------
// 8. the commands and main

int bad_input(std::string message) {
  // One line, whatever the message quotes (a file name or a token may hold a
  // line break or a terminal escape).
  for (char& c : message)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  std::cout.clear();
  std::cerr << "error: " << message << "\n";
  return kExitBadInput;
}

// The four commands and what their flags write into. Each struct stays where
// main() declared it: CLI11 holds pointers to its fields.
struct TraceCommand {
  CLI::App* cmd = nullptr;
  RunOptions run;
  std::string format = "json";
  std::optional<int> cache_step;  // --cache-step N
};
struct ExportCommand {
  CLI::App* cmd = nullptr;
  RunOptions run;
  ExportOptions exp;
};
struct CodeCommand {
  CLI::App* cmd = nullptr;
  RunOptions run;
};
struct BenchCommand {
  CLI::App* cmd = nullptr;
  BenchOptions bench;
};
struct TokenizeCommand {
  CLI::App* cmd = nullptr;
  TokenizeOptions tok;
};

void add_trace_command(CLI::App& app, TraceCommand& c) {
  c.cmd = app.add_subcommand("trace", "print every stage of one run (JSON by default)");
  add_run_options(*c.cmd, c.run);
  c.cmd->add_option("--format", c.format, "json (docs/trace-format.md) or text (for people)")
      ->check(CLI::IsMember({"json", "text"}));
  c.cmd->add_option("--cache-step", c.cache_step,
                    "step N (from 0) of generating token by token with the KV cache: token N's "
                    "query against the cache, checked against a full recompute (multihead, "
                    "gqa, swa, mla)");
}

void add_export_command(CLI::App& app, ExportCommand& c) {
  c.cmd = app.add_subcommand(
      "export", "write every stage (or the chosen ones) as files and print their paths");
  add_run_options(*c.cmd, c.run);
  c.cmd->add_option("--format", c.exp.format, "svg, csv, npy or json (docs/file-formats.md)")
      ->required()
      ->check(CLI::IsMember({"svg", "csv", "npy", "json"}));
  c.cmd
      ->add_option("--out", c.exp.out_dir,
                   "folder to write the files into (created, with its parents, when missing)")
      ->required();
  c.cmd->add_option("--stage", c.exp.stage, "only this stage id (e.g. weights)");
  c.cmd->add_option("--head", c.exp.head, "only stages of this head (-1: whole-layer stages)");
  // Here they set the SVG figures only: say so first.
  const run_flags::FigureFlagOptions figure_flags =
      run_flags::add_figure_flags(*c.cmd, c.exp.figure);
  for (CLI::Option* opt : {figure_flags.row_scale, figure_flags.decimals})
    opt->description("svg: " + opt->get_description());
}

void add_code_command(CLI::App& app, CodeCommand& c) {
  c.cmd = app.add_subcommand(
      "code", "print the run as one PyTorch script; python3 runs it and prints the output");
  add_run_options(*c.cmd, c.run);
}

void add_bench_command(CLI::App& app, BenchCommand& c) {
  c.cmd = app.add_subcommand("bench", "time full traces at a given size");
  add_bench_options(*c.cmd, c.bench);
}

void add_tokenize_command(CLI::App& app, TokenizeCommand& c) {
  c.cmd = app.add_subcommand("tokenize", "print a text's token ids, tokens and byte spans");
  c.cmd->add_option(
      "--vocab", c.tok.vocab,
      "a tokenizer.json (Llama 3, Qwen2/3, Gemma 3) or a folder holding one, or a GPT-2 folder "
      "with encoder.json + vocab.bpe or vocab.json + merges.txt (default: GPT-2's, gpt2/ in the "
      "data folder --version prints, or $ATTNSCOPE_ASSETS/gpt2)");
  c.cmd->add_option("--text", c.tok.text, "the text to tokenize (UTF-8)");
  c.cmd->add_option("--text-file", c.tok.text_file, "file holding the text ('-': stdin)");
  c.cmd->add_flag("--jsonl", c.tok.jsonl,
                  "the text is JSON lines, one JSON string each; print one JSON object per string");
  c.cmd->add_flag("--no-special", c.tok.no_special,
                  "read special tokens typed in the text as plain text and add no BOS");
}

// A command line CLI11 refused: one "error: " line. CLI11 says "A subcommand
// is required" for `attnscope-cli frob`; this names the word.
int refused_command_line(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  const std::string kCommands = "trace, export, code, bench, tokenize, kv-memory, model";
  if (argc > 1 && !app.get_subcommands().size()) {
    const std::string first = argv[1];
    if (!first.empty() && first[0] == '-')
      return bad_input("unknown option '" + first + "' (commands: " + kCommands +
                       "; run attnscope-cli --help)");
    return bad_input("unknown command '" + first + "' (commands: " + kCommands +
                     "; run attnscope-cli --help)");
  }
  std::string what = e.what();
  if (what.empty()) what = "bad arguments";
  return bad_input(what + " (run attnscope-cli --help)");
}

}  // namespace

// The whole command line as a function, so that the fuzzer (fuzz/fuzz_cli.cpp)
// can call it with generated arguments; main() below only forwards to it.
int attnscope_cli_main(int argc, char** argv) {
  CLI::App app{"attnscope-cli: every stage of the attention mechanism, as numbers",
               "attnscope-cli"};
  // The second line says where the vocabulary is read from, so an installed
  // copy can be told from the build tree's.
  app.set_version_flag("--version", [] {
    return std::string("attnscope-cli " ATTNSCOPE_VERSION "\ndata: ") +
           core::Gpt2Tokenizer::assets_dir();
  });
  app.require_subcommand(1);
  TraceCommand trace;
  ExportCommand exp;
  CodeCommand code;
  BenchCommand bench;
  TokenizeCommand tokenize;
  add_trace_command(app, trace);
  add_export_command(app, exp);
  add_code_command(app, code);
  add_bench_command(app, bench);
  attnscope::cli::ModelCommands model;
  attnscope::cli::add_model_commands(app, model);
  add_tokenize_command(app, tokenize);
  attnscope::cli::KvMemoryOptions kv_memory;
  CLI::App* kv_memory_cmd = attnscope::cli::add_kv_memory_command(app, kv_memory);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version (and their kin)
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return refused_command_line(app, e, argc, argv);
  }

  try {
    if (bench.cmd->parsed()) return run_bench(bench.bench);
    if (const auto done = attnscope::cli::run_model_commands(model)) return *done;
    if (tokenize.cmd->parsed()) return run_tokenize(tokenize.tok);
    if (code.cmd->parsed()) return run_code(resolve_run(code.run));
    if (exp.cmd->parsed()) return run_export(run_trace(resolve_run(exp.run)), exp.exp);
    if (kv_memory_cmd->parsed()) return attnscope::cli::run_kv_memory(kv_memory);
    if (trace.cache_step)
      return write_trace(cache_step_trace(resolve_run(trace.run), *trace.cache_step),
                         trace.format == "text");
    return write_trace(run_trace(resolve_run(trace.run)), trace.format == "text");
  } catch (const core::ParseError& e) {
    return bad_input(e.what());
  } catch (const core::FileError& e) {
    return bad_input(e.what());
  } catch (const std::bad_alloc&) {
    return bad_input("out of memory: try fewer tokens or smaller dimensions");
  } catch (const std::exception& e) {  // a bug, but still one clear line and no crash
    return bad_input(std::string("unexpected failure: ") + e.what());
  }
}

#ifndef ATTNSCOPE_CLI_NO_MAIN
int main(int argc, char** argv) { return attnscope_cli_main(argc, argv); }
#endif
