// texture.hpp: heatmap textures as seen by the panels. A Texture is an
// uploaded RgbaImage with an ImGui id; GlTexture (gl_texture.hpp) is the real
// one, NullTexture stands in when there is no GL context (headless tests).
// TextureCache keeps one texture per on-screen slot and re-colours it only
// when what it shows changed. When a recomputed trace arrives, prepare()
// colours and uploads what the visible slots will show from it into second
// textures, a few milliseconds per frame, and commit_prepared() swaps them
// in with the trace: no frame pays for a dozen 1024 x 1024 uploads at once.
//
// A slot drawn small (the head grid's tiles) asks for at most `max_side`
// texels a side: each texel is then the mean colour of the block of cells it
// covers, like a mipmap level. At T = 1024 that keeps a 90-pixel tile from
// holding 4 MiB of texture (12 heads, twice while a new trace is prepared),
// and the box filter shows a thin diagonal that nearest-texel sampling of
// the full picture would skip.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "attnscope/base/trace.hpp"
#include "imgui.h"
#include "render/heatmap.hpp"

namespace attnscope::gui {

class Texture {
 public:
  virtual ~Texture() = default;
  // Replaces the contents (and size) with `image`; nearest filtering.
  virtual void upload(const RgbaImage& image) = 0;
  // What ImDrawList::AddImage takes.
  virtual ImTextureID id() const = 0;
};

using TextureFactory = std::function<std::unique_ptr<Texture>()>;

// How many cells a side share one texel so that neither side of a rows x cols
// picture exceeds max_side texels: 1 (full resolution) when it fits or when
// max_side is 0 (no limit).
int texel_factor(Eigen::Index rows, Eigen::Index cols, int max_side);

// A picture of a rows x cols matrix reduced by `factor`: ceil(rows / factor)
// by ceil(cols / factor) texels, not yet coloured.
RgbaImage reduced_image(Eigen::Index rows, Eigen::Index cols, int factor);

// Writes the colours of matrix rows [row0, row0 + band.height), coloured at
// full resolution in `band`, into `image` reduced by `factor`: each texel is
// the rounded mean colour of the factor x factor cells it covers (fewer at
// the right and bottom edges). row0 is a multiple of factor, and so is
// band.height unless the band ends the matrix.
void add_band(const RgbaImage& band, int row0, int factor, RgbaImage& image);

// No GL: remembers the last upload's size so tests can see it happened.
class NullTexture final : public Texture {
 public:
  void upload(const RgbaImage& image) override;
  ImTextureID id() const override { return nullptr; }
  int width = 0, height = 0;
};

// A coloured stage ready to draw, or (ready == false) one still being
// coloured over the next frames: then id is null and the view draws a
// placeholder; range is valid once has_range.
struct HeatmapTexture {
  ImTextureID id = nullptr;
  ValueRange range;  // the colour bar's range
  // The texture coordinate of the matrix's far corner: below 1 when the
  // texture is reduced and its last texels cover fewer cells than the others.
  ImVec2 uv_max{1.0f, 1.0f};
  bool ready = true;
  bool has_range = true;
  float progress = 1.0f;  // share of the colouring done, for the placeholder
};

class TextureCache {
 public:
  // Without a factory textures are NullTexture.
  void set_factory(TextureFactory factory) { factory_ = std::move(factory); }

  // The texture for `slot` showing `stage` of trace `trace_version` coloured
  // with `map`; colours and uploads only when one of those changed. Small
  // stages are coloured at once; large ones (a step change at T = 1024 needs
  // a dozen 1024 x 1024 textures) share frame_budget_ms per frame and come
  // back not ready until done, so no frame freezes.
  // max_side > 0 caps the texture's sides (texel_factor); 0 is full resolution.
  // scope Row colours each row on its own range; the returned range is the
  // matrix's either way (the colour bar's counts, its masked swatch).
  // follows_trace false: the stage is not the trace's (a model view
  // thumbnail), so prepare() leaves the slot alone; trace_version is then
  // whatever version its owner gives its data.
  HeatmapTexture get(const std::string& slot, std::uint64_t trace_version, const core::Stage& stage,
                     ScaleKind kind, Colormap map, int max_side = 0,
                     ScaleScope scope = ScaleScope::Matrix, bool follows_trace = true);
  // Many small stages (the model view's thumbnails, one per head) in one
  // texture: a grid of `columns` cells, each stage coloured as get()
  // colours it (on its own range, or each row on its own with scope Row),
  // a texel of gap between cells. One upload and one texture for all of
  // them: in software GL, a keystroke's new overview of 448 heads spent
  // ~9 ms of its frame colouring and uploading them one texture at a time.
  // Coloured and uploaded again only when version, kind, map or scope
  // changes (version: what the owner gives its data, e.g. the overview's).
  struct Atlas {
    ImTextureID id = nullptr;
    std::vector<ImVec4> uv;  // per stage: its cell's (u0, v0, u1, v1)
  };
  const Atlas& atlas(const std::string& slot, std::uint64_t version,
                     const std::vector<core::Stage>& stages, int columns, ScaleKind kind,
                     Colormap map, ScaleScope scope);

  // Milliseconds per frame get() may spend colouring and uploading large
  // stages (the first large one of a frame always makes some progress).
  void set_frame_budget(double ms) { frame_budget_ms_ = ms; }
  // A get() of the last frame returned a texture not ready yet: draw another.
  bool pending() const { return pending_; }

  // Frees textures whose slot was not drawn for a while (call once a frame,
  // before drawing).
  void collect(int frame);

  // Double buffering for a new trace `next`, to be shown as `next_version`:
  // colours and uploads, into second textures, what every slot drawn in the
  // last frame will show from it (the same stage id and head), spending about
  // `budget_ms` of this frame. True once every such slot is ready.
  bool prepare(const core::Trace& next, std::uint64_t next_version, double budget_ms);
  // Swaps in the textures prepared for `next_version` (call when the trace
  // is swapped): the first frame of the new trace uploads nothing.
  void commit_prepared(std::uint64_t next_version);
  // Forgets any preparation (the new trace was superseded).
  void drop_prepared();
  // Frees every texture (before the GL context goes away).
  void clear() {
    entries_.clear();
    atlases_.clear();
  }

  long uploads() const { return uploads_; }  // total uploads so far, for tests
  std::size_t size() const { return entries_.size(); }

 private:
  // A slot's picture of the next trace, being prepared.
  struct Next {
    std::uint64_t version = 0;  // 0: none
    // The slot's colours when the preparation began: if the palette or the
    // scale scope changes meanwhile, it starts again (rows coloured both
    // ways must never be swapped in).
    Colormap map = Colormap::Viridis;
    ScaleScope scope = ScaleScope::Matrix;
    ValueRange range;
    RgbaImage image;  // coloured band by band, freed once uploaded
    int rows_done = 0;
    ImVec2 uv_max{1.0f, 1.0f};
    std::unique_ptr<Texture> texture;  // set once uploaded: ready
  };
  // What a slot should show, and the colouring of it in progress.
  struct Want {
    std::uint64_t trace_version = 0;
    std::string stage_id;
    int head = -2;
    ScaleKind kind = ScaleKind::Diverging;
    Colormap map = Colormap::Viridis;
    int max_side = 0;
    ScaleScope scope = ScaleScope::Matrix;
    bool operator==(const Want&) const = default;
    // The same matrix on the same kind of scale: only the colours differ.
    bool same_data(const Want& o) const {
      return trace_version == o.trace_version && stage_id == o.stage_id && head == o.head &&
             kind == o.kind;
    }
  };
  struct Work {
    Want want;
    bool active = false;
    bool has_range = false;
    ValueRange range;
    RgbaImage image;
    int rows_done = 0;
  };
  struct Entry {
    Next next;
    Work work;
    std::unique_ptr<Texture> texture;
    Want shown;                 // what `texture` shows
    bool follows_trace = true;  // prepare() colours its stage of the next trace
    ValueRange range;
    ImVec2 uv_max{1.0f, 1.0f};
    int last_used = 0;
  };
  std::unordered_map<std::string, Entry> entries_;
  struct AtlasEntry {
    Atlas cells;
    std::unique_ptr<Texture> texture;
    std::uint64_t version = 0;
    std::size_t count = 0;
    int columns = 0;
    ScaleKind kind = ScaleKind::Diverging;
    Colormap map = Colormap::Viridis;
    ScaleScope scope = ScaleScope::Matrix;
    int last_used = 0;
  };
  std::unordered_map<std::string, AtlasEntry> atlases_;
  TextureFactory factory_;
  long uploads_ = 0;
  int frame_ = 0;
  double frame_budget_ms_ = 6.0;
  double frame_spent_ms_ = 0.0;  // by get() in this frame
  bool frame_progressed_ = false;
  bool pending_ = false;
  std::unique_ptr<Texture> make_texture() const;
  // Colours rows [row0, row0 + rows) of m into `image` (reduced by `factor`):
  // on `range`, or each row on its own (scope Row).
  static void colour_rows(const core::RowMatrix& m, Eigen::Index row0, Eigen::Index rows,
                          const ValueRange& range, ScaleKind kind, ScaleScope scope, Colormap map,
                          int factor, RgbaImage& image);
  // Rows coloured per step (~64 K cells, well under a millisecond), a multiple of factor.
  static Eigen::Index band_rows(Eigen::Index cols, int factor);
};

}  // namespace attnscope::gui
