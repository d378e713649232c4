#!/usr/bin/env python3
"""man_completion_test.py: the man pages and the bash completion match the programs.

    python3 man_completion_test.py path/to/attnscope-cli path/to/attnscope|- SOURCE_DIR

docs/man/attnscope-cli.1, docs/man/attnscope.1 and
app/cli/completion/attnscope-cli.bash are written by hand; this test keeps
them in step with the options the binaries really take. It reads `--help` of
each program, each command and each `model` command (CLI11's format) and
checks:

  man pages   every option of every --help is documented (.TP, option in bold,
              its argument in italics exactly when it takes one) in the right
              section, and no section documents an option --help lacks; every
              command has its subsection and a SYNOPSIS line; positional
              arguments match; the version in .TH is the program's; every
              environment variable the sources read is in an ENVIRONMENT
              section; `man --warnings` renders each page without a warning and
              no line wider than 80 columns (skipped, saying why, without man)
  completion  `bash -n`; its tables hold exactly the commands and options of
              every --help, flags as flags; fixed value sets (--format's
              {json,text}, --variant's and --preset's lists) are the ones --help
              names, stage ids exist in core's catalogue; and, in a bash that
              sources the script (once bare, once more after bash-completion
              when that is installed), completing `attnscope-cli tr`, every
              `CMD --`, every value set, file and folder names, comma lists and
              `--option=value` gives what it should.

Pass `-` for the GUI when it is not built (ATTNSCOPE_BUILD_GUI=OFF): its
page is then not compared with a --help.

In the CLI page each command has a subsection ".SS attnscope-cli CMD" under
COMMANDS; options several commands share are documented once in a section
named "... OPTIONS" (RUN OPTIONS, ...), which a command takes when the
paragraph before its first option names that section in bold. -h/--help is
documented once, under OPTIONS, for every command.
"""

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

TIMEOUT_S = 30
HELP_OPTIONS = {"-h", "--help"}
REQUIRED_SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS",
                     "ENVIRONMENT", "FILES", "EXAMPLES", "SEE ALSO"]
BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"

failures = []


def fail(message):
    failures.append(message)


# ---------------------------------------------------------------------------
# --help, as CLI11 prints it

class Option:
    def __init__(self, name, value_type, choices, description):
        self.name = name                # "--variant" or "-h"
        self.value_type = value_type    # "TEXT", "INT", ... or None for a flag
        self.choices = choices          # {"json", "text"} from TEXT:{json,text}, else None
        self.description = description


class Help:
    def __init__(self):
        self.options = {}        # name -> Option (short and long names alike)
        self.positionals = []    # "MODEL", "PATH"
        self.subcommands = []    # in --help's order


OPTION_SPEC = re.compile(r"^(-[^\s]+)(.*)$")
VALUE_TYPE = re.compile(r"^\s+([A-Z]+)(?::(\{[^}]*\}))?(?=[\s:=]|$)")


def parse_help(text):
    """CLI11's --help: sections "Options:", "Positionals:", "Subcommands:"."""
    help_ = Help()
    section = None
    last = None  # the Option a continuation line describes
    for line in text.splitlines():
        if re.match(r"^[A-Z][A-Za-z ]*:$", line):
            section = line[:-1]
            last = None
            continue
        if not line.strip():
            continue
        if line.startswith("   "):  # a description too long for the option's line
            if last is not None:
                last.description = (last.description + " " + line.strip()).strip()
            continue
        spec, *rest = re.split(r"\s{2,}", line.strip(), maxsplit=1)
        description = rest[0] if rest else ""
        if section == "Options":
            m = OPTION_SPEC.match(spec)
            if not m:
                continue
            names, after = m.group(1), m.group(2)
            vt = VALUE_TYPE.match(after)
            value_type = vt.group(1) if vt and vt.group(1) != "REQUIRED" else None
            choices = set(vt.group(2)[1:-1].split(",")) if vt and vt.group(2) else None
            option = None
            for name in names.split(","):
                option = Option(name, value_type, choices, description.strip())
                help_.options[name] = option
            last = option
        elif section == "Positionals":
            help_.positionals.append(spec.split()[0])
            last = None
        elif section == "Subcommands":
            help_.subcommands.append(spec.split()[0])
            last = None
    return help_


def run_help(binary, words):
    proc = subprocess.run([binary, *words, "--help"], capture_output=True, timeout=TIMEOUT_S)
    shown = " ".join([os.path.basename(binary), *words, "--help"])
    if proc.returncode != 0:
        raise SystemExit(f"FAIL: `{shown}` exited {proc.returncode}: "
                         f"{proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode("utf-8")


def program_helps(binary, program):
    """Every command path ("attnscope-cli", "attnscope-cli model trace") -> Help."""
    helps = {}
    pending = [[]]
    while pending:
        words = pending.pop(0)
        help_ = parse_help(run_help(binary, words))
        helps[" ".join([program, *words])] = help_
        pending.extend([*words, sub] for sub in help_.subcommands)
    return helps


def program_version(binary):
    proc = subprocess.run([binary, "--version"], capture_output=True, timeout=TIMEOUT_S)
    # "attnscope-cli 0.1.0" (then lines about the data folder)
    return proc.stdout.decode().splitlines()[0].split()[-1]


# ---------------------------------------------------------------------------
# man pages

def unescape(text):
    """Troff text as a reader sees it, near enough for names: \\- is -, \\~ a space."""
    return text.replace("\\-", "-").replace("\\~", " ").replace('"', "").strip()


class Tag:
    def __init__(self, raw, section, subsection, line_no):
        self.raw = raw
        self.section = section
        self.subsection = subsection
        self.line_no = line_no
        text = raw.replace("\\-", "-").replace("\\~", " ")
        self.options = re.findall(r"\\fB(-{1,2}[A-Za-z0-9][-A-Za-z0-9]*)\\f[RP]", text)
        m = re.match(r"^\\fI([A-Z][A-Z_]*)\\f[RP]$", text.strip())
        self.positional = m.group(1) if m else None
        # An argument: something in italics after the option names.
        self.has_argument = "\\fI" in text and self.positional is None

    def where(self, path):
        return f"{path}:{self.line_no}"


class ManPage:
    def __init__(self, path):
        self.path = path
        self.lines = open(path, encoding="utf-8").read().splitlines()
        self.th = None
        self.sections = []      # titles, in order
        self.subsections = {}   # section -> [subsection titles]
        self.tags = []          # every .TP tag
        self.bodies = {}        # (section, subsection) -> the lines before its first .TP
        section = subsection = None
        seen_tp = False
        it = iter(enumerate(self.lines, 1))
        for no, line in it:
            if line.startswith('.\\"'):
                continue
            if line.startswith(".TH "):
                self.th = shlex.split(line[4:])
            elif line.startswith(".SH "):
                section, subsection, seen_tp = unescape(line[4:]), None, False
                self.sections.append(section)
                self.subsections[section] = []
            elif line.startswith(".SS "):
                subsection, seen_tp = unescape(line[4:]), False
                self.subsections[section].append(subsection)
            elif line.strip() == ".TP":
                seen_tp = True
                for tag_no, tag_line in it:
                    if not tag_line.startswith('.\\"'):
                        self.tags.append(Tag(tag_line, section, subsection, tag_no))
                        break
            elif not seen_tp:
                self.bodies.setdefault((section, subsection), []).append(line)

    def tags_in(self, section, subsection=None, any_subsection=False):
        return [t for t in self.tags
                if t.section == section and (any_subsection or t.subsection == subsection)]

    def section_text(self, section):
        out, inside = [], False
        for line in self.lines:
            if line.startswith(".SH "):
                inside = unescape(line[4:]) == section
            elif inside:
                out.append(line)
        return "\n".join(out)


def documented(tags, page_path, what):
    """option name -> Tag, failing on an option documented twice or a tag that names none."""
    found = {}
    for tag in tags:
        if tag.positional:
            continue
        if not tag.options:
            fail(f"{tag.where(page_path)}: the .TP tag {tag.raw!r} in {what} names no option "
                 f"in bold (write it as \\fB\\-\\-flag\\fR \\fIARG\\fR)")
        for name in tag.options:
            if name in found:
                fail(f"{tag.where(page_path)}: {name} is documented twice for {what} "
                     f"(also at line {found[name].line_no})")
            found[name] = tag
    return found


def compare_options(help_options, doc, page_path, command, section_name, exempt=()):
    """--help's options against the documented ones, both ways, and their arguments."""
    for name, option in sorted(help_options.items()):
        if name in exempt:
            continue
        tag = doc.get(name)
        if tag is None:
            fail(f"{page_path}: `{command} --help` has {name}, but the man page does not "
                 f"document it in {section_name}")
            continue
        if option.value_type and not tag.has_argument:
            fail(f"{tag.where(page_path)}: {name} of `{command}` takes a value "
                 f"({option.value_type}) but its .TP tag gives no argument in italics")
        if not option.value_type and tag.has_argument:
            fail(f"{tag.where(page_path)}: {name} of `{command}` is a flag but its .TP tag "
                 f"gives it an argument")
    for name, tag in sorted(doc.items()):
        if name not in help_options:
            fail(f"{tag.where(page_path)}: the man page documents {name} in {section_name}, "
                 f"but `{command} --help` has no such option")


def check_layout(page, program):
    if not page.th or page.th[:2] != [program.upper(), "1"]:
        fail(f"{page.path}: .TH should start with {program.upper()} 1, not {page.th}")
    for section in REQUIRED_SECTIONS:
        if section not in page.sections:
            fail(f"{page.path}: no .SH {section} section")


def check_version(page, program, version):
    if not page.th or len(page.th) < 4 or page.th[3] != f"attnscope {version}":
        fail(f"{page.path}: .TH says {page.th[3:4] if page.th else None}, but "
             f"`{program} --version` is {version}: write \"attnscope {version}\"")


def check_gui_page(page, helps):
    help_ = helps["attnscope"]
    doc = documented(page.tags_in("OPTIONS", any_subsection=True), page.path, "OPTIONS")
    compare_options(help_.options, doc, page.path, "attnscope", "OPTIONS")


def shared_groups(page):
    """Sections such as "RUN OPTIONS": title -> {option: Tag}, and their positionals."""
    groups = {}
    for section in page.sections:
        if section.endswith(" OPTIONS"):
            tags = page.tags_in(section, any_subsection=True)
            groups[section] = (documented(tags, page.path, section),
                               [t.positional for t in tags if t.positional])
    return groups


def check_cli_page(page, helps):
    top = helps["attnscope-cli"]
    global_doc = documented(page.tags_in("OPTIONS", any_subsection=True), page.path, "OPTIONS")
    compare_options(top.options, global_doc, page.path, "attnscope-cli", "OPTIONS")

    groups = shared_groups(page)
    used_groups = set()
    subsections = page.subsections.get("COMMANDS", [])
    if "COMMANDS" not in page.sections:
        fail(f"{page.path}: no .SH COMMANDS section with one .SS per command")
    synopsis = unescape(page.section_text("SYNOPSIS"))
    for command, help_ in sorted(helps.items()):
        if command == "attnscope-cli":
            continue
        if command not in subsections:
            fail(f"{page.path}: no subsection .SS \"{command}\" under COMMANDS for the "
                 f"command `{command}`")
            continue
        if not help_.subcommands and not re.search(
                r"^\.SY " + re.escape(command) + r"$", synopsis, re.M):
            fail(f"{page.path}: SYNOPSIS has no .SY line for `{command}`")
        intro = "\n".join(page.bodies.get(("COMMANDS", command), []))
        taken = [g for g in groups
                 if re.search(r"(^\.B\s+\"?|\\fB)" + re.escape(g.replace("-", "\\-")),
                              intro, re.M)]
        used_groups.update(taken)
        tags = page.tags_in("COMMANDS", command)
        doc = documented(tags, page.path, f"\"{command}\"")
        positionals = [t.positional for t in tags if t.positional]
        for group in taken:
            for name, tag in groups[group][0].items():
                if name in doc:
                    fail(f"{tag.where(page.path)}: {name} of `{command}` is documented both "
                         f"in {group} and in its own subsection")
                doc[name] = tag
            positionals += groups[group][1]
        where = f"\"{command}\"" + (f" (and {', '.join(taken)}, which it names)" if taken else "")
        compare_options(help_.options, doc, page.path, command, where, exempt=HELP_OPTIONS)
        if sorted(positionals) != sorted(help_.positionals):
            fail(f"{page.path}: `{command}` takes the positional arguments "
                 f"{help_.positionals or 'none'} but the man page documents "
                 f"{positionals or 'none'} in {where}")
    for extra in sorted(set(subsections) - set(helps)):
        fail(f"{page.path}: the subsection \"{extra}\" under COMMANDS names no command "
             f"attnscope-cli has")
    for group in sorted(set(groups) - used_groups):
        fail(f"{page.path}: no command's subsection names the section {group} in bold, "
             f"so its options are documented for no command")
    if not HELP_OPTIONS <= set(global_doc):
        fail(f"{page.path}: OPTIONS must document -h, --help (every command takes them)")


def source_environment(source_dir):
    """Environment variables the programs' sources read (tests excluded)."""
    names = {}
    pattern = re.compile(r"\b(?:getenv|env_path|env)\(\s*\"([A-Z][A-Z0-9_]+)\"\s*\)")
    for top in ("core/src", "app"):
        for root, dirs, files in os.walk(os.path.join(source_dir, top)):
            dirs[:] = [d for d in dirs if d != "tests"]
            for f in files:
                if f.endswith((".cpp", ".hpp")):
                    path = os.path.join(root, f)
                    for name in pattern.findall(open(path, encoding="utf-8").read()):
                        names.setdefault(name, os.path.relpath(path, source_dir))
    return names


def check_environment(pages, source_dir):
    """Each variable the sources read is a .TP tag of some page's ENVIRONMENT."""
    tagged = set()
    for page in pages:
        for tag in page.tags_in("ENVIRONMENT", any_subsection=True):
            plain = re.sub(r"\\f[A-Z]", " ", tag.raw)
            tagged.update(re.findall(r"\b[A-Z][A-Z0-9_]{2,}\b", plain))
    for name, where in sorted(source_environment(source_dir).items()):
        if name not in tagged:
            fail(f"{where} reads the environment variable {name}, but no man page's "
                 f"ENVIRONMENT section has a .TP entry for it")


def check_rendering(pages):
    man = shutil.which("man")
    groff = shutil.which("groff")
    if not man or not groff:
        print("skipped: rendering the man pages with `man --warnings` (no "
              f"{'man' if not man else 'groff'} here; Debian: apt-get install man-db groff-base)")
        return
    env = dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="80")
    env.pop("MANPAGER", None)
    env.pop("PAGER", None)
    for page in pages:
        proc = subprocess.run([man, "--warnings", "-l", page.path], capture_output=True,
                              env=env, timeout=TIMEOUT_S)
        warnings = proc.stderr.decode(errors="replace").strip()
        if proc.returncode != 0 or warnings:
            fail(f"{page.path}: `man --warnings -l` exited {proc.returncode} with:\n  "
                 + warnings.replace("\n", "\n  "))
        for line in proc.stdout.decode(errors="replace").splitlines():
            if len(line) > 80:
                fail(f"{page.path}: a rendered line is wider than 80 columns: {line.strip()!r}")


# ---------------------------------------------------------------------------
# bash completion

def bash(script):
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True,
                          timeout=TIMEOUT_S)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode(errors="replace")


def completion_tables(script_path):
    """The script's tables, read by bash itself: commands and option rows."""
    rc, out, err = bash(f"""
        source {shlex.quote(script_path)} || exit 1
        for k in "${{!_attnscope_cli_commands[@]}}"; do
          printf 'C\\t%s\\t%s\\n' "$k" "$(echo ${{_attnscope_cli_commands[$k]}})"
        done
        for k in "${{!_attnscope_cli_options[@]}}"; do
          printf 'O\\t%s\\t%s\\n' "$k" "$(echo ${{_attnscope_cli_options[$k]}})"
        done
        for k in "${{!_attnscope_cli_words[@]}}"; do
          printf 'W\\t%s\\t%s\\n' "$k" "$(echo ${{_attnscope_cli_words[$k]}})"
        done
        complete -p attnscope-cli || true
    """)
    if rc != 0:
        fail(f"{script_path}: sourcing it in bash failed ({rc}): {err.strip()}")
        return None
    commands, options, words = {}, {}, {}
    registered = ""
    for line in out.splitlines():
        parts = line.split("\t")
        if parts[0] == "C":
            commands[parts[1]] = parts[2].split()
        elif parts[0] == "O":
            cells = parts[2].split()
            if len(cells) % 2:
                fail(f"{script_path}: the option table of \"{parts[1]}\" has an odd number of "
                     f"cells: every row is an option and what follows it")
            rows = {}
            for name, kind in zip(cells[::2], cells[1::2]):
                if name in rows:
                    fail(f"{script_path}: {name} is twice in the table of \"{parts[1]}\"")
                rows[name] = kind
            options[parts[1]] = rows
        elif parts[0] == "W":
            words[parts[1]] = parts[2].split()
        else:
            registered = line
    if registered.strip() != "complete -F _attnscope_cli attnscope-cli":
        fail(f"{script_path}: `complete -p attnscope-cli` after sourcing it says "
             f"{registered.strip()!r}, not `complete -F _attnscope_cli attnscope-cli`")
    return commands, options, words


# Where `attnscope-cli trace --help` lists the values of options without a
# CLI11 set: --variant's text is the list, --preset's follows "built-in inputs:".
LISTED_IN_HELP = {"--variant": r"^(.*)$", "--preset": r"built-in inputs: (.*?) \(default"}


def listed_values(helps, name):
    """The words `attnscope-cli trace --help` lists for option `name`."""
    option = helps["attnscope-cli trace"].options.get(name)
    m = re.search(LISTED_IN_HELP[name], option.description) if option else None
    if not m:
        fail(f"`attnscope-cli trace --help` no longer lists the values of {name} as "
             f"this test expects ({LISTED_IN_HELP[name]!r}): update LISTED_IN_HELP")
        return []
    return [w.strip() for w in re.split(r",|\bor\b", m.group(1)) if w.strip()]


def stage_catalogue(source_dir):
    path = os.path.join(source_dir, "core/include/attnscope/base/stages.hpp")
    return set(re.findall(r"inline constexpr char \w+\[\] = \"([^\"]+)\";",
                          open(path, encoding="utf-8").read()))


def check_tables(script_path, helps, source_dir):
    """The tables against --help; False when the script could not even be sourced."""
    tables = completion_tables(script_path)
    if tables is None:
        return False
    commands, options, words = tables
    listed = {name: set(listed_values(helps, name)) for name in LISTED_IN_HELP}
    stages = stage_catalogue(source_dir)
    for command, help_ in sorted(helps.items()):
        if help_.subcommands != commands.get(command, []):
            fail(f"{script_path}: _attnscope_cli_commands[{command}] lists "
                 f"{commands.get(command, [])}, but `{command} --help` has the subcommands "
                 f"{help_.subcommands}")
        rows = options.get(command)
        if rows is None:
            fail(f"{script_path}: _attnscope_cli_options has no table for `{command}`")
            continue
        table = f"_attnscope_cli_options[{command}]"
        for name, option in sorted(help_.options.items()):
            kind = rows.get(name)
            if kind is None:
                fail(f"{script_path}: `{command} --help` has {name}, but {table} lacks it")
            elif option.value_type and kind == "-":
                fail(f"{script_path}: {name} of `{command}` takes a value "
                     f"({option.value_type}) but {table} marks it a flag (-)")
            elif not option.value_type and kind != "-":
                fail(f"{script_path}: {name} of `{command}` is a flag but {table} expects a "
                     f"value ({kind}) after it")
        for name in sorted(rows):
            if name[0].isupper():
                if name not in help_.positionals:
                    fail(f"{script_path}: {table} has the positional {name}, but "
                         f"`{command} --help` has {help_.positionals or 'no positionals'}")
            elif name not in help_.options:
                fail(f"{script_path}: {table} has {name}, but `{command} --help` has no such "
                     f"option")
        for name in help_.positionals:
            if name not in rows:
                fail(f"{script_path}: `{command}` takes the positional {name}, but {table} "
                     f"has no row for it")
        for name, option in help_.options.items():
            kind = rows.get(name, "-").rstrip(",")
            want = None
            if option.choices:
                want = option.choices
            elif name in listed:
                want = listed[name]
            if want is not None and set(words.get(kind, [])) != want:
                fail(f"{script_path}: {name} of `{command}` completes "
                     f"{sorted(words.get(kind, []))} (_attnscope_cli_words[{kind}]) but "
                     f"--help names {sorted(want)}")
    for extra in sorted(set(options) - set(helps)):
        fail(f"{script_path}: _attnscope_cli_options[{extra}] is a table for no command")
    for extra in sorted(set(commands) - set(helps)):
        fail(f"{script_path}: _attnscope_cli_commands[{extra}] names no command")
    for kind in ("stage", "model_stage"):
        for stage in words.get(kind, []):
            if stage not in stages:
                fail(f"{script_path}: _attnscope_cli_words[{kind}] has '{stage}', which is no "
                     f"stage id of core/include/attnscope/base/stages.hpp")
    return True


def completion_cases(helps, tmp):
    """(words as bash splits them, expected replies, what it checks)."""
    cases = [
        (["attnscope-cli", "tr"], ["trace"], "a command from its first letters"),
        (["attnscope-cli", "trace", "--var"], ["--variant"], "an option from its first letters"),
        (["attnscope-cli", "trace", "--variant", "=", "ca"], ["causal"],
         "--option=value (bash splits it at =)"),
        (["attnscope-cli", "trace", "--seed", "7", "--pre"], ["--preset"],
         "an option after an option's value"),
        (["attnscope-cli", "trace", "--seed", "--pre"], [],
         "nothing: attnscope-cli would read the word as --seed's value"),
        (["attnscope-cli", "model", "trace", "m", "--stages", "weights,con"],
         ["weights,concat", "weights,context"], "the next item of a comma list"),
        (["attnscope-cli", "trace", "--config", os.path.join(tmp, "r")],
         [os.path.join(tmp, "run.json")], "a file name"),
        (["attnscope-cli", "export", "--out", tmp + "/"], [os.path.join(tmp, "sub")],
         "folder names only"),
        (["attnscope-cli", "model", "info", os.path.join(tmp, "ru")],
         [os.path.join(tmp, "run.json")], "a positional path"),
    ]
    for command, help_ in helps.items():
        words = command.split()
        longs = sorted(n for n in help_.options if n.startswith("--"))
        cases.append(([*words, "--"], longs, f"every option of `{command}`"))
        if help_.subcommands:
            cases.append(([*words, ""], sorted(help_.subcommands), f"the commands of `{command}`"))
        for name, option in help_.options.items():
            if option.choices:
                cases.append(([*words, name, ""], sorted(option.choices),
                              f"the values of {name} of `{command}`"))
    for name in LISTED_IN_HELP:
        cases.append((["attnscope-cli", "trace", name, ""], sorted(listed_values(helps, name)),
                      f"the values of {name} named in `attnscope-cli trace --help`"))
    return cases


def typed_line(words):
    """The command line a list of COMP_WORDS stands for ("--variant", "=", "ca" is --variant=ca)."""
    return " ".join(words).replace(" = ", "=").replace(" =", "=")


def check_completions(script_path, helps, with_bash_completion):
    with tempfile.TemporaryDirectory(prefix="attnscope-completion-") as tmp:
        open(os.path.join(tmp, "run.json"), "w").close()
        os.mkdir(os.path.join(tmp, "sub"))
        cases = completion_cases(helps, tmp)
        lines = []
        if with_bash_completion:
            lines.append(f"source {shlex.quote(BASH_COMPLETION)}")
        lines.append(f"source {shlex.quote(script_path)}")
        for k, (words, _, _) in enumerate(cases):
            line = typed_line(words)
            lines.append(
                f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)}); "
                f"COMP_CWORD={len(words) - 1}; COMP_LINE={shlex.quote(line)}; "
                f"COMP_POINT=${{#COMP_LINE}}; COMPREPLY=(); _attnscope_cli; "
                f"printf '@@%s\\n' {k}; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
        rc, out, err = bash("\n".join(lines))
        if rc != 0:
            fail(f"{script_path}: driving the completion in bash failed ({rc}): {err.strip()}")
            return 0
        replies, current = {}, None
        for line in out.splitlines():
            if line.startswith("@@"):
                current = int(line[2:])
                replies[current] = []
            elif current is not None and line:
                replies[current].append(line)
        where = " (after bash-completion)" if with_bash_completion else ""
        for k, (words, want, what) in enumerate(cases):
            got = sorted(replies.get(k, []))
            if got != sorted(want):
                typed = typed_line(words)
                missing = sorted(set(want) - set(got))
                extra = sorted(set(got) - set(want))
                fail(f"{script_path}: completing `{typed}<TAB>`{where} ({what}) gave {got}; "
                     + (f"missing {missing}" if missing else "")
                     + ("; " if missing and extra else "")
                     + (f"not expected {extra}" if extra else ""))
        return len(cases)


def check_completion(script_path, helps, source_dir):
    rc, _, err = bash(f"bash -n {shlex.quote(script_path)}")
    if rc != 0:
        fail(f"{script_path}: `bash -n` fails:\n  {err.strip()}")
        return
    if not check_tables(script_path, helps, source_dir):
        return
    count = check_completions(script_path, helps, with_bash_completion=False)
    if os.path.exists(BASH_COMPLETION):
        count += check_completions(script_path, helps, with_bash_completion=True)
    else:
        print(f"note: {BASH_COMPLETION} is not installed: completion checked without it only")
    print(f"completion: {count} completions checked")


# ---------------------------------------------------------------------------

def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    cli, gui, source_dir = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
    cli_page = ManPage(os.path.join(source_dir, "docs/man/attnscope-cli.1"))
    gui_page = ManPage(os.path.join(source_dir, "docs/man/attnscope.1"))
    script = os.path.join(source_dir, "app/cli/completion/attnscope-cli.bash")

    check_layout(cli_page, "attnscope-cli")
    check_layout(gui_page, "attnscope")
    cli_helps = program_helps(cli, "attnscope-cli")
    check_version(cli_page, "attnscope-cli", program_version(cli))
    check_cli_page(cli_page, cli_helps)
    if gui == "-":
        print("skipped: attnscope.1 against `attnscope --help` (the GUI is not built)")
    else:
        gui_helps = program_helps(gui, "attnscope")
        check_version(gui_page, "attnscope", program_version(gui))
        check_gui_page(gui_page, gui_helps)
    check_environment([cli_page, gui_page], source_dir)
    check_rendering([cli_page, gui_page])
    check_completion(script, cli_helps, source_dir)

    if failures:
        for f in failures:
            print("FAIL:", f)
        print(f"{len(failures)} problem(s)")
        return 1
    print(f"ok: {len(cli_helps)} attnscope-cli commands"
          + ("" if gui == "-" else " and attnscope's options")
          + " match the man pages and the completion")
    return 0


if __name__ == "__main__":
    sys.exit(main())
