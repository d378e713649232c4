// model_state.cpp: see model_state.hpp.
#include "state/model_state.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "attnscope/io/io.hpp"
#include "attnscope/model/family_config.hpp"

namespace attnscope::gui {

namespace {

struct ViewName {
  ModelView view;
  std::string_view id;
};
constexpr ViewName kViews[] = {
    {ModelView::Model, "model"}, {ModelView::Head, "head"}, {ModelView::Tokens, "tokens"}};

}  // namespace

std::string_view model_view_id(ModelView v) {
  for (const auto& n : kViews)
    if (n.view == v) return n.id;
  return "?";
}

std::optional<ModelView> parse_model_view(std::string_view id) {
  for (const auto& n : kViews)
    if (n.id == id) return n.view;
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// Loader

ModelLoader::~ModelLoader() {
  if (thread_.joinable()) thread_.join();
}

void ModelLoader::start(const std::string& path, const std::string& config) {
  if (thread_.joinable()) thread_.join();  // a cancelled load finishes first
  std::uint64_t gen = 0;
  {
    std::lock_guard lock(mutex_);
    gen = ++generation_;
    done_.reset();
  }
  loading_ = true;
  path_ = path;
  started_ = std::chrono::steady_clock::now();
  progress_ = std::make_shared<core::LoadProgress>();
  thread_ = std::thread([this, path, config, gen, progress = progress_] {
    Outcome o;
    o.path = path;
    try {
      if (config.empty() && core::family_model_type(path)) {
        const std::filesystem::path folder = core::model_folder(path);
        (void)core::read_family_config((folder / "config.json").string());  // its refusal first
        auto f = std::make_shared<FamilyModelOpen>();
        f->tokenizer = std::make_shared<const core::HfTokenizer>(
            core::HfTokenizer::load(core::family_tokenizer_path(folder).string()));
        f->model = core::FamilyModel::load(path, progress.get());
        f->name = folder.filename().string();
        o.family = std::move(f);
      } else {
        o.model = core::Gpt2Model::load(
            path, config.empty() ? std::nullopt : std::optional<std::filesystem::path>(config),
            progress.get());
      }
    } catch (const std::bad_alloc&) {
      o.error = "out of memory while loading " + path;
    } catch (const std::exception& e) {
      o.error = in_the_apps_words(e.what());
    }
    std::lock_guard lock(mutex_);
    if (gen == generation_) done_ = std::move(o);
  });
}

std::string in_the_apps_words(std::string message) {
  // The loader's messages name attnscope-cli's flag; the app has a field.
  static const std::string flag = "pass --config FILE";
  for (std::size_t at = message.find(flag); at != std::string::npos; at = message.find(flag, at))
    message.replace(at, flag.size(), kConfigFieldWords);
  return message;
}

void ModelLoader::cancel() {
  if (progress_) progress_->cancel = true;  // the load stops before its next block
  std::lock_guard lock(mutex_);
  ++generation_;
  done_.reset();
  loading_ = false;
}

double ModelLoader::seconds() const {
  if (!loading_) return 0.0;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

std::optional<ModelLoader::Outcome> ModelLoader::take() {
  std::lock_guard lock(mutex_);
  if (!done_) return std::nullopt;
  std::optional<Outcome> o = std::move(done_);
  done_.reset();
  loading_ = false;
  return o;
}

void ModelLoader::wait() {
  if (thread_.joinable()) thread_.join();
}

// ---------------------------------------------------------------------------
// State

void ModelState::remember(const std::string& p) {
  std::erase(recent, p);
  recent.insert(recent.begin(), p);
  if (recent.size() > kRecent) recent.resize(kRecent);
}

void ModelState::encode_text() {
  dropped = 0;
  too_long = false;
  const bool encoded =
      family ? typed.encode(*family->tokenizer)
             : typed.encode(model ? model->tokenizer() : core::Gpt2Tokenizer::builtin());
  if (!encoded) return;
  const std::size_t n = typed.tokens.size();
  const auto limit = static_cast<std::size_t>(max_tokens());
  if (n == 0) {
    typed.error = "Type some text: the model needs at least one token.";
  } else if (n > limit && keep_last) {
    dropped = static_cast<int>(n - limit);
    typed.tokens.erase(typed.tokens.begin(), typed.tokens.begin() + dropped);
  } else if (n > limit) {
    too_long = true;
    typed.error = "The text is " + std::to_string(n) + " tokens; the model reads " +
                  std::to_string(limit) + " at most. Shorten it, or keep its last " +
                  std::to_string(limit) + " tokens.";
  }
}

int ModelState::max_tokens() const {
  if (family) return family->max_tokens();
  return model ? model->config().n_positions : 1024;
}

std::string ModelState::model_name() const {
  if (family) return family->name;
  return model ? model->name() : std::string();
}

int ModelState::num_layers() const {
  if (family) return family->model->config().num_hidden_layers;
  return model ? model->config().n_layer : 0;
}

int ModelState::num_heads() const {
  if (family) return family->model->config().num_attention_heads;
  return model ? model->config().n_head : 0;
}

std::optional<std::string> ModelState::token_bytes(int id) const {
  try {
    if (family && id >= 0 && static_cast<std::size_t>(id) < family->tokenizer->vocab_size())
      return family->tokenizer->token_bytes(id);
    if (model && id >= 0 && static_cast<std::size_t>(id) < model->tokenizer().vocab_size())
      return model->tokenizer().token_bytes(id);
  } catch (const core::ParseError&) {
  }
  return std::nullopt;
}

std::string ModelState::token_name(int id) const {
  if (family) return family->token_name(id);
  const std::optional<std::string> bytes = token_bytes(id);
  return bytes ? core::printable_token(*bytes) : "<" + std::to_string(id) + ">";
}

double pattern_value(const ModelOverview& o, core::PatternKind kind, int index) {
  const auto at = static_cast<std::size_t>(index);
  const core::HeadPatternScores& s = o.patterns.at(at);
  switch (kind) {
    case core::PatternKind::PreviousToken:
      return s.previous_token;
    case core::PatternKind::FirstToken:
      return s.first_token;
    case core::PatternKind::Self:
      return s.self;
    case core::PatternKind::Entropy:
      return s.entropy;
    case core::PatternKind::EntropyNormalised:
      return s.entropy_normalised;
    case core::PatternKind::Induction:
      return o.induction && at < o.induction->size() ? (*o.induction)[at] : 0.0;
  }
  return 0.0;
}

HeadRank head_rank(const ModelOverview& o, core::PatternKind kind, int index, int decimals) {
  const double unit = std::pow(10.0, decimals);
  // As printed: two scores that print alike are tied (NaN ties with nothing).
  auto printed = [&](int k) { return std::round(pattern_value(o, kind, k) * unit); };
  const double v = printed(index);
  HeadRank r;
  for (int k = 0; k < o.layers * o.heads; ++k) {
    if (k == index) continue;
    ++r.others;
    const double w = printed(k);
    r.lower += w < v ? 1 : 0;
    r.tied += w == v ? 1 : 0;
  }
  return r;
}

std::vector<int> heads_in_order(const ModelOverview& o, int layer, const PatternChoice& choice) {
  std::vector<int> order(static_cast<std::size_t>(o.heads));
  std::iota(order.begin(), order.end(), 0);
  if (choice.kind && choice.sort)
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return pattern_value(o, *choice.kind, layer * o.heads + a) >
             pattern_value(o, *choice.kind, layer * o.heads + b);
    });
  return order;
}

}  // namespace attnscope::gui
