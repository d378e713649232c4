// hf_tokenizer_tables.cpp: the open-addressing tables of a loaded
// tokenizer.json (see hf_tokenizer_internal.hpp). Linear probing; each
// table doubles when it would be more than half full.
#include <functional>

#include "text/hf_tokenizer_internal.hpp"

namespace attnscope::core {

namespace {

std::uint32_t hash_of(std::string_view key) {
  return static_cast<std::uint32_t>(std::hash<std::string_view>{}(key));
}

std::size_t capacity_for(std::size_t count) {
  std::size_t capacity = 16;
  while (capacity < 2 * count) capacity *= 2;
  return capacity;
}

}  // namespace

void TokenIds::reserve(std::size_t count) {
  if (capacity_for(count) <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity_for(count), Slot{});
  for (const Slot& s : old)
    if (s.id >= 0) {
      const std::string_view key(arena_.data() + s.offset, s.length);
      slots_[locate(key, s.hash)] = s;
    }
}

void TokenIds::grow() { reserve(slots_.empty() ? 8 : slots_.size()); }

std::size_t TokenIds::locate(std::string_view key, std::uint32_t hash) const {
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.id < 0) return i;
    if (s.hash == hash && std::string_view(arena_.data() + s.offset, s.length) == key) return i;
  }
}

bool TokenIds::insert(std::string_view key, int id) {
  if (2 * (count_ + 1) > slots_.size()) grow();
  const std::uint32_t hash = hash_of(key);
  Slot& slot = slots_[locate(key, hash)];
  if (slot.id >= 0) return false;
  slot = {static_cast<std::uint32_t>(arena_.size()), static_cast<std::uint32_t>(key.size()), hash,
          id};
  arena_.append(key);
  ++count_;
  return true;
}

void TokenIds::assign(std::string_view key, int id) {
  if (insert(key, id)) return;
  slots_[locate(key, hash_of(key))].id = id;
}

int TokenIds::find(std::string_view key) const {
  if (slots_.empty()) return -1;
  return slots_[locate(key, hash_of(key))].id;
}

void MergeTable::reserve(std::size_t count) {
  if (capacity_for(count) <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity_for(count), Slot{});
  for (const Slot& s : old)
    if (s.key != ~std::uint64_t{0}) slots_[locate(s.key)] = s;
}

std::size_t MergeTable::locate(std::uint64_t key) const {
  const std::size_t mask = slots_.size() - 1;
  // Fibonacci hashing spreads ids that differ only in their low bits.
  std::size_t i = static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
  while (slots_[i].key != ~std::uint64_t{0} && slots_[i].key != key) i = (i + 1) & mask;
  return i;
}

void MergeTable::insert(int left, int right, Merge merge) {
  if (2 * (count_ + 1) > slots_.size()) reserve(slots_.empty() ? 8 : slots_.size());
  const std::uint64_t key =
      (static_cast<std::uint64_t>(left) << 32) | static_cast<std::uint32_t>(right);
  Slot& slot = slots_[locate(key)];
  if (slot.key == key) return;
  slot = {key, merge};
  ++count_;
}

const MergeTable::Merge* MergeTable::find(int left, int right) const {
  if (slots_.empty()) return nullptr;
  const std::uint64_t key =
      (static_cast<std::uint64_t>(left) << 32) | static_cast<std::uint32_t>(right);
  const Slot& slot = slots_[locate(key)];
  return slot.key == key ? &slot.merge : nullptr;
}

}  // namespace attnscope::core
