// model_download.cpp: see model_download.hpp.
#include "state/model_download.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <system_error>

#include "attnscope/hub/cache.hpp"

namespace attnscope::gui {

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

const std::vector<CatalogModel>& model_catalog() {
  // Sizes are those of each repo's model.safetensors on the Hub (the
  // tokenizer files add about 2 MB).
  static const std::vector<CatalogModel> models = {
      {"openai-community/gpt2", "GPT-2 124M", "548 MB", "MIT",
       "The model chapters 4 and 5 build: 12 layers x 12 heads, d = 768."},
      {"distilbert/distilgpt2", "DistilGPT-2", "353 MB", "Apache-2.0",
       "GPT-2 distilled to 6 layers: the same heads per layer, half the depth."},
      {"openai-community/gpt2-medium", "GPT-2 medium", "1.52 GB", "MIT",
       "24 layers x 16 heads, d = 1024: GPT-2 355M."},
      {"HuggingFaceTB/SmolLM2-135M", "SmolLM2 135M", "269 MB", "Apache-2.0",
       "A Llama-style model: 30 layers, 9 query heads sharing 3 K/V heads, RoPE, SwiGLU."},
      {"Qwen/Qwen3-0.6B", "Qwen3 0.6B", "1.50 GB", "Apache-2.0",
       "28 layers, 16 query heads sharing 8 K/V heads, q/k norm before RoPE."},
      {"google/gemma-3-270m", "Gemma 3 270M", "536 MB", "Gemma (gated)",
       "18 layers, 4 heads on 1 K/V head, sliding-window layers with a full one every sixth. "
       "Accept the licence on huggingface.co and set HF_TOKEN first."},
      {"meta-llama/Llama-3.2-1B", "Llama 3.2 1B", "2.47 GB", "Llama (gated)",
       "16 layers, 32 query heads sharing 8 K/V heads, Llama 3's RoPE scaling. Accept the "
       "licence on huggingface.co and set HF_TOKEN first."},
  };
  return models;
}

std::optional<CachedModel> cached_model(const core::hub::RepoRef& ref) {
  namespace fs = std::filesystem;
  const fs::path storage = core::hub::cache_root() / core::hub::repo_folder_name(ref.repo);
  const std::optional<std::string> commit = core::hub::read_ref(storage, ref.revision);
  if (!commit) return std::nullopt;
  const fs::path snapshot = storage / "snapshots" / *commit;
  std::error_code ec;
  const bool weights = fs::exists(snapshot / "model.safetensors", ec) ||
                       fs::exists(snapshot / "model.safetensors.index.json", ec);
  if (!fs::exists(snapshot / "config.json", ec) || !weights) return std::nullopt;
  return CachedModel{*commit, snapshot.string()};
}

std::optional<core::hub::RepoRef> uncached_repo(const std::string& model) {
  std::error_code ec;
  if (model.empty() || model.find('/') == std::string::npos || std::filesystem::exists(model, ec))
    return std::nullopt;
  core::hub::RepoRef ref;
  try {
    ref = core::hub::parse_repo_ref(model);
  } catch (const std::exception&) {
    return std::nullopt;  // not an id: the loader says "no such file or folder"
  }
  if (cached_model(ref)) return std::nullopt;
  return ref;
}

ModelDownload::~ModelDownload() {
  if (job_) job_->cancel();
  if (thread_.joinable()) thread_.join();
}

void ModelDownload::start(const core::hub::RepoRef& ref, const std::string& endpoint) {
  if (job_) job_->cancel();
  if (thread_.joinable()) thread_.join();
  ref_ = ref;
  job_ = std::make_unique<core::hub::PullJob>(core::hub::pull_options(ref, endpoint));
  progress_ = {};
  result_ = {};
  state_ = State::Running;
  started_ = now_seconds();
  thread_ = std::thread([job = job_.get()] { job->run(); });
}

void ModelDownload::cancel() {
  if (job_ && running()) job_->cancel();
}

void ModelDownload::poll() {
  if (!job_ || !running()) return;
  progress_ = job_->progress();
  if (job_->wait_for(std::chrono::milliseconds(0))) finish();
}

void ModelDownload::wait() {
  if (!job_ || !running()) return;
  while (!job_->wait_for(std::chrono::milliseconds(100))) {
  }
  poll();
}

void ModelDownload::finish() {
  if (thread_.joinable()) thread_.join();
  progress_ = job_->progress();
  result_ = job_->result();
  ended_ = now_seconds();
  state_ = result_.ok ? State::Done : result_.cancelled ? State::Cancelled : State::Failed;
  job_.reset();
}

double ModelDownload::seconds() const {
  if (state_ == State::Idle) return 0;
  return (running() ? now_seconds() : ended_) - started_;
}

std::string byte_size_text(double bytes) {
  char buf[32];
  if (bytes < 1e3)
    std::snprintf(buf, sizeof buf, "%.0f bytes", bytes);
  else if (bytes < 1e6)
    std::snprintf(buf, sizeof buf, "%.0f kB", bytes / 1e3);
  else if (bytes < 1e9)
    std::snprintf(buf, sizeof buf, bytes < 1e7 ? "%.1f MB" : "%.0f MB", bytes / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  return buf;
}

std::string time_left_text(double seconds) {
  if (seconds < 0 || !std::isfinite(seconds)) return "";
  char buf[48];
  if (seconds < 60)
    std::snprintf(buf, sizeof buf, "%.0f s left", std::ceil(seconds));
  else if (seconds < 3600)
    std::snprintf(buf, sizeof buf, "about %.0f min left", std::ceil(seconds / 60));
  else
    std::snprintf(buf, sizeof buf, "about %.1f h left", seconds / 3600);
  return buf;
}

}  // namespace attnscope::gui
