// export_command.hpp: writing a trace's stages as files (svg, csv, npy,
// json), shared by `export` and `model export`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "attnscope/base/trace.hpp"
#include "run_flags/run_flags.hpp"

namespace attnscope::cli {

struct ExportOptions {
  std::string format;
  std::string out_dir;
  std::optional<std::string> stage;
  std::optional<int> head;
  run_flags::FigureFlags figure;  // svg: --row-scale, --decimals (as the app's View menu), --theme
};

// The stages --stage/--head select (ParseError when none), written by
// write_stages. Returns the exit code.
int run_export(const core::Trace& trace, const ExportOptions& o);
// Writes `stages` of `trace` into o.out_dir in o.format, then prints their
// paths, one per line. All or nothing (core::export_stages): when a write
// fails, this call's files are removed. Throws ParseError for a stage too
// large for SVG, or figure flags with a data format.
int write_stages(const core::Trace& trace, const std::vector<const core::Stage*>& stages,
                 const ExportOptions& o);

}  // namespace attnscope::cli
