// run_flags.cpp: the run flags' declarations and their reading into a RunSpec.
#include "run_flags.hpp"

#include <charconv>
#include <vector>

#include "attnscope/attention/embedding.hpp"
#include "attnscope/formats/files.hpp"
#include "attnscope/text/tokenizer.hpp"
#include "figure/scale.hpp"

namespace attnscope::run_flags {

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

std::string variant_names() {
  std::vector<std::string> names;
  for (core::Variant v : core::kAllVariants) names.emplace_back(core::variant_id(v));
  return joined(names);
}

bool RunFlags::any() const {
  return config || preset || variant || d_out || num_heads || dropout || seed || qkv_bias || eval ||
         random || input_seed || num_kv_groups || window || latent_dim || rope || rope_theta;
}

std::optional<std::uint64_t> RunFlags::parsed_seed() const {
  if (!seed) return std::nullopt;
  return core::parse_seed(*seed);
}

std::optional<std::uint64_t> RunFlags::parsed_input_seed() const {
  if (!input_seed) return std::nullopt;
  return core::parse_seed(*input_seed, "--input-seed");
}

std::optional<std::string> RunFlags::config_path() const {
  if (config && config->empty())
    throw core::ParseError("--config needs a file path (or - for standard input)");
  return config;
}

core::RunSpec RunFlags::spec() const {
  core::RunSpec s;
  s.preset = preset;
  if (variant) {
    s.variant = core::parse_variant(*variant);
    if (!s.variant)
      throw core::ParseError("unknown variant '" + *variant + "' (known: " + variant_names() + ")");
  }
  s.d_out = d_out;
  s.num_heads = num_heads;
  s.dropout = dropout;
  s.seed = parsed_seed();
  if (qkv_bias) s.qkv_bias = true;
  if (eval) s.training = false;
  s.num_kv_groups = num_kv_groups;
  s.window = window;
  s.latent_dim = latent_dim;
  if (rope) s.rope = true;
  if (rope_theta && !rope)
    throw core::ParseError(
        "--rope-theta sets the base of RoPE's angles: add --rope, or drop "
        "--rope-theta");
  s.rope_theta = rope_theta;
  return s;
}

RunFlagOptions add_run_flags(CLI::App& cmd, RunFlags& f) {
  RunFlagOptions made;
  // An empty value stays a given one ("" for std::optional<std::string>),
  // for config_path() and core::parse_seed to refuse.
  made.config = cmd.add_option("--config", f.config,
                               "JSON config file (- reads standard input); see "
                               "docs/trace-format.md");
  made.preset =
      cmd.add_option("--preset", f.preset,
                     "built-in inputs: " + joined(core::preset_names()) + " (default: book)");
  cmd.add_option("--variant", f.variant, variant_names());
  cmd.add_option("--d-out", f.d_out, "output width of the query/key/value projections");
  cmd.add_option("--heads", f.num_heads, "number of attention heads");
  cmd.add_option("--dropout", f.dropout, "dropout probability on the attention weights, 0..1");
  cmd.add_option("--seed", f.seed, "torch.manual_seed value (default 123)");
  cmd.add_flag("--qkv-bias", f.qkv_bias, "give the query/key/value projections a bias");
  cmd.add_flag("--eval", f.eval, "eval mode: dropout off");
  cmd.add_option("--kv-groups", f.num_kv_groups,
                 "gqa: K/V heads the query heads share (num_kv_groups; must divide --heads; 1 "
                 "is multi-query attention)");
  cmd.add_option("--window", f.window,
                 "swa: keys each query sees, itself included (sliding_window_size, at least 1; "
                 "default: plain causal)");
  cmd.add_option("--latent-dim", f.latent_dim,
                 "mla: width of the K/V latent (at least 1; default max(16, d_out / 8))");
  cmd.add_flag("--rope", f.rope,
               "rotate queries and keys by position (RoPE) in multihead, gqa or swa; head_dim "
               "must be even");
  cmd.add_option("--rope-theta", f.rope_theta, "with --rope: the angles' base (default 10000)");
  made.random = cmd.add_option("--random", f.random,
                               "inputs: T tokens t0..t<T-1> of D random values, torch.rand(T, D) "
                               "after torch.manual_seed(--input-seed), e.g. 512,64");
  cmd.add_option("--input-seed", f.input_seed,
                 "torch.manual_seed value for random inputs (--random), apart from --seed for "
                 "the weights (default " +
                     std::to_string(core::kDefaultInputSeed) + ")");
  return made;
}

std::optional<int> FigureFlags::checked_decimals() const {
  if (decimals && (*decimals < figure::kMinDecimals || *decimals > figure::kMaxDecimals))
    throw core::ParseError("--decimals (" + std::to_string(*decimals) + ") must be between " +
                           std::to_string(figure::kMinDecimals) + " and " +
                           std::to_string(figure::kMaxDecimals));
  return decimals;
}

std::optional<figure::Theme> FigureFlags::checked_theme() const {
  if (!theme) return std::nullopt;
  if (const auto t = figure::parse_theme(*theme)) return t;
  throw core::ParseError("--theme '" + *theme + "' is not a theme: use " +
                         std::string(figure::kThemeNames));
}

FigureFlagOptions add_figure_flags(CLI::App& cmd, FigureFlags& f) {
  FigureFlagOptions made;
  made.row_scale = cmd.add_flag("--row-scale", f.row_scale,
                                "colour each heatmap row on its own scale (View > Colour each "
                                "row on its own scale)");
  made.decimals = cmd.add_option("--decimals", f.decimals,
                                 "decimals in heatmap cells, 1 to 6 (default 4, the book's; View "
                                 "> Decimals)");
  made.theme = cmd.add_option("--theme", f.theme,
                              "exported figures' colours around the cells: dark (as the app's "
                              "screen) or light (a white page with dark text, for papers and "
                              "slides); light unless set");
  return made;
}

std::string TextFlags::read() const {
  if (text && text_file)
    throw core::ParseError("--text and --text-file both give the text: keep one of them");
  return text ? *text : core::read_text_file(*text_file);
}

TextFlagOptions add_text_flags(CLI::App& cmd, TextFlags& f, Program program) {
  TextFlagOptions made;
  if (program == Program::CliModel) {
    made.text = cmd.add_option("--text", f.text, "the text (UTF-8; <|endoftext|> is token 50256)");
    made.text_file =
        cmd.add_option("--text-file", f.text_file, "file holding the text ('-': stdin)");
    return made;
  }
  const bool cli = program == Program::Cli;
  made.text = cmd.add_option(
      "--text", f.text,
      cli ? "inputs from your own sentence: GPT-2's tokens of TEXT, embedded as in the book's "
            "chapter 2 (torch.manual_seed(--embed-seed); nn.Embedding(50257, --d-in))"
          : "inputs from your own sentence: GPT-2's token ids, then "
            "torch.manual_seed(--embed-seed); nn.Embedding(50257, --d-in)");
  made.text_file =
      cmd.add_option("--text-file", f.text_file, "as --text, the text read from FILE ('-': stdin)");
  made.d_in = cmd.add_option(
      "--d-in", f.d_in,
      cli ? "with --text: embedding width (default " + std::to_string(core::kDefaultTextDim) +
                ", small like the book's chapter-3 example; chapter 2 uses 256)"
          : std::string("with --text: embedding width (default 3)"));
  made.embed_seed = cmd.add_option(
      "--embed-seed", f.embed_seed,
      cli ? "with --text: torch.manual_seed value before the embedding layers (default " +
                std::to_string(core::kDefaultEmbedSeed) + ")"
          : std::string("with --text: torch.manual_seed before the embedding layers (default "
                        "123)"));
  made.positions = cmd.add_option(
      "--positions", f.positions,
      cli ? "with --text: add a positional nn.Embedding(N, --d-in) (context_length N, at least "
            "the number of tokens); 0 or absent: none"
          : "with --text: add nn.Embedding(N, d_in) position embeddings (N >= tokens)");
  return made;
}

std::vector<int> parse_ids(std::string_view list, const core::Gpt2Model& model) {
  return parse_ids(list, model.name(), model.config().vocab_size);
}

std::vector<int> parse_ids(std::string_view list, const std::string& name, int vocab) {
  std::vector<int> ids;
  std::size_t at = 0;
  while (at <= list.size()) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    const std::string item(list.substr(at, comma - at));
    int v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size())
      throw core::ParseError("--ids: '" + item +
                             "' is not a token id (give whole numbers separated by commas, e.g. "
                             "--ids 15496,11,995)");
    ids.push_back(v);
    at = comma + 1;
  }
  for (int id : ids)
    if (id < 0 || id >= vocab)
      throw core::ParseError("token id " + std::to_string(id) + " is outside " + name +
                             "'s vocabulary (0.." + std::to_string(vocab - 1) + ")");
  return ids;
}

std::vector<int> ModelFlags::model_ids(const core::Gpt2Model& model, const TextFlags& t) const {
  const int given = t.text.has_value() + t.text_file.has_value() + ids.has_value();
  if (given != 1)
    throw core::ParseError(
        "give the text with exactly one of --text TEXT, --text-file FILE and "
        "--ids 1,2,3");
  std::vector<int> out;
  if (ids) {
    out = parse_ids(*ids, model);
  } else {
    for (const core::Token& token : model.tokenizer().encode(t.read())) out.push_back(token.id);
  }
  if (out.empty()) throw core::ParseError("the text has no tokens: give some text");
  const auto limit = static_cast<std::size_t>(model.config().n_positions);
  if (out.size() > limit) {
    if (!keep_last)
      throw core::ParseError("the text is " + std::to_string(out.size()) + " tokens but " +
                             model.name() +
                             " reads at most n_positions = " + std::to_string(limit) +
                             "; shorten it, or pass --keep-last to keep its last " +
                             std::to_string(limit) + " tokens");
    out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(limit));
  }
  return out;
}

ModelFlagOptions add_model_flags(CLI::App& cmd, ModelFlags& f, Program program, TextFlags* text) {
  ModelFlagOptions made;
  if (program == Program::App) {
    made.path = cmd.add_option(
        "--model", f.path,
        "open a trained model: a Hugging Face GPT-2, Llama, Mistral, Qwen or Gemma 3 "
        "folder or "
        ".safetensors, the book's chapter-5 .pth (--model-config: its "
        "GPT_CONFIG as JSON), or org/name[@revision] pulled into the "
        "Hugging Face cache; --text is then the model's text");
    made.config = cmd.add_option("--model-config", f.config,
                                 "with --model: its config file: config.json for safetensors, "
                                 "the book's GPT_CONFIG as JSON for .pth (default: beside the "
                                 "weights; --config is read so too)")
                      ->needs(made.path);
    made.ids = cmd.add_option("--ids", f.ids,
                              "with --model: token ids instead of --text, e.g. 15496,11,995")
                   ->needs(made.path);
    cmd.add_flag("--keep-last", f.keep_last,
                 "with --model: keep the last n_positions tokens of a longer text (else it is "
                 "refused)")
        ->needs(made.path);
    return made;
  }
  made.path = cmd.add_option("MODEL", f.path,
                             "a Hugging Face GPT-2 folder, a .safetensors file, the book's "
                             ".pth, or org/name[@revision] pulled into the Hugging Face cache "
                             "(model pull)")
                  ->required();
  made.config = cmd.add_option("--config", f.config,
                               "config file: config.json for safetensors, the book's GPT_CONFIG "
                               "as JSON for .pth (default: beside the weights)");
  if (text) add_text_flags(cmd, *text, Program::CliModel);
  made.ids = cmd.add_option("--ids", f.ids, "token ids instead of text, e.g. 15496,11,995");
  cmd.add_flag("--keep-last", f.keep_last,
               "keep the last n_positions tokens of a longer text (else it is refused)");
  return made;
}

}  // namespace attnscope::run_flags
