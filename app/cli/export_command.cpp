// export_command.cpp: `attnscope-cli export` (and `model export`): stages
// as files, one per stage, all or nothing.
#include "export_command.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>

#include "attnscope/formats/files.hpp"
#include "attnscope/formats/formats.hpp"
#include "attnscope/io/io.hpp"
#include "figure/stage_figure.hpp"
#include "figure/svg.hpp"

namespace attnscope::cli {

namespace core = attnscope::core;
namespace fs = std::filesystem;

namespace {

// The stages --stage/--head select, in trace order; throws ParseError when none.
std::vector<const core::Stage*> select_stages(const core::Trace& trace, const ExportOptions& o) {
  std::vector<const core::Stage*> chosen;
  for (const auto& st : trace.stages)
    if ((!o.stage || st.id == *o.stage) && (!o.head || st.head == *o.head)) chosen.push_back(&st);
  if (!chosen.empty()) return chosen;
  std::vector<std::string> ids;
  for (const auto& st : trace.stages)
    if (std::find(ids.begin(), ids.end(), st.id) == ids.end()) ids.push_back(st.id);
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  const std::string variant(core::variant_id(trace.config.variant));
  if (o.stage && std::find(ids.begin(), ids.end(), *o.stage) == ids.end())
    throw core::ParseError("unknown stage '" + *o.stage + "' for " + variant +
                           " (stages: " + list(ids) + ")");
  std::vector<std::string> heads;
  for (const auto& st : trace.stages)
    if (!o.stage || st.id == *o.stage) {
      const std::string h = std::to_string(st.head);
      if (std::find(heads.begin(), heads.end(), h) == heads.end()) heads.push_back(h);
    }
  throw core::ParseError("no stage " + (o.stage ? "'" + *o.stage + "' " : std::string()) +
                         "has head " + std::to_string(*o.head) + " in this " + variant +
                         " run (heads: " + list(heads) + "; -1 is the whole layer)");
}

}  // namespace

// Writes the selected stages, then prints their paths. All or nothing
// (core::export_stages): when a write fails, this run's files are removed.
int run_export(const core::Trace& trace, const ExportOptions& o) {
  return write_stages(trace, select_stages(trace, o), o);
}

int write_stages(const core::Trace& trace, const std::vector<const core::Stage*>& stages,
                 const ExportOptions& o) {
  const bool svg = o.format == "svg";
  const auto format = svg ? std::nullopt : core::parse_data_format(o.format);
  if (svg)
    for (const auto* st : stages)
      if (!figure::svg_supported(static_cast<int>(st->data().rows()),
                                 static_cast<int>(st->data().cols())))
        throw core::ParseError("stage '" + st->id + "' is " + std::to_string(st->data().rows()) +
                               "x" + std::to_string(st->data().cols()) +
                               ": SVG export is limited to " +
                               std::to_string(figure::kMaxSvgCells) +
                               " cells; use --format npy or csv for large runs");
  if (o.figure.row_scale && !svg)
    throw core::ParseError(
        "--row-scale sets the colours of SVG figures; " + o.format +
        " files hold the values themselves (drop --row-scale, or use --format svg)");
  if (o.figure.decimals && !svg)
    throw core::ParseError(
        "--decimals sets the numbers in SVG figures' cells; " + o.format +
        " files hold the values themselves (drop --decimals, or use --format svg)");
  if (o.figure.theme && !svg)
    throw core::ParseError("--theme sets the colours of SVG figures; " + o.format +
                           " files hold the values themselves (drop --theme, or use --format svg)");
  const std::optional<int> decimals = o.figure.checked_decimals();
  const std::optional<figure::Theme> theme = o.figure.checked_theme();
  if (o.out_dir.empty()) throw core::ParseError("--out needs a folder path");
  const fs::path dir(o.out_dir);
  std::error_code ec;
  if (fs::exists(dir, ec) || fs::is_symlink(dir, ec)) {
    core::require_folder(dir);
  } else {
    core::ensure_folder(dir);  // with its parents; the message names what failed
    std::cerr << "attnscope-cli: created the folder " << dir.string() << "\n";
  }

  const auto now = std::chrono::system_clock::now();  // one timestamp for the whole run
  figure::FigureStyle style;
  if (o.figure.row_scale) style.scope = figure::ScaleScope::Row;
  if (decimals) style.decimals = *decimals;
  if (theme) style.theme = *theme;
  const std::string ext = svg ? ".svg" : std::string(core::format_extension(*format));
  const core::StageRenderer render =
      svg ? [style](const core::Trace& t,
                    const core::Stage&
                        st) { return figure::heatmap_svg(figure::stage_heatmap(t, st, style)); }
          : core::data_renderer(*format);
  for (const auto& p : core::export_stages(trace, stages, dir, ext, render, now))
    std::cout << p.string() << "\n";
  std::cout.flush();
  return std::cout ? 0 : 1;
}

}  // namespace attnscope::cli
