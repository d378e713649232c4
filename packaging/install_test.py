#!/usr/bin/env python3
"""The installed attnscope, as a user gets it: `cmake --install` into a
temporary prefix, then the .deb CPack makes.

usage: install_test.py --build DIR --work DIR --id APP_ID --version X.Y.Z [--gui]

Checks the layout (programs, data, launcher entry, metadata, icons, man
pages, completion), validates the .desktop file and the AppStream metadata
with their own validators, moves the prefix (the programs must find their
data relative to themselves) and runs the CLI and a --screenshot of the app
from outside the source tree; then builds the .deb and checks its fields,
its files and that its programs run from an unpacked copy. Run under
xvfb-run for the app's screenshot. Standard library only.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "app", "gui",
                                "tests"))
from xvfb_util import check, finish, png_info  # noqa: E402  (the app tests' helpers)


def run(cmd, cwd, env=None, timeout=300):
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def png_size(path):
    try:
        return png_info(path)[:2]
    except (OSError, ValueError):
        return None


def clean_env(work):
    """No ATTNSCOPE_ASSETS, and config/pictures inside the work folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTNSCOPE_")}
    env["HOME"] = os.path.join(work, "home")
    env["XDG_CONFIG_HOME"] = os.path.join(work, "home", ".config")
    env["XDG_DATA_HOME"] = os.path.join(work, "home", ".local", "share")
    os.makedirs(env["HOME"], exist_ok=True)
    return env


def check_layout(prefix, app_id, gui):
    share = os.path.join(prefix, "share")
    want = ["bin/attnscope-cli", "share/attnscope/gpt2/encoder.json",
            "share/attnscope/gpt2/vocab.bpe", "share/attnscope/gpt2/LICENSE",
            "share/man/man1/attnscope-cli.1.gz", "share/bash-completion/completions/attnscope-cli"]
    if gui:
        want += ["bin/attnscope", f"share/applications/{app_id}.desktop",
                 f"share/metainfo/{app_id}.metainfo.xml", f"share/mime/packages/{app_id}.xml",
                 f"share/icons/hicolor/scalable/apps/{app_id}.svg", "share/man/man1/attnscope.1.gz"]
    # Every document a man page points to is installed where it says.
    here = os.path.dirname(os.path.abspath(__file__))
    for page in ("attnscope-cli", "attnscope") if gui else ("attnscope-cli",):
        text = open(os.path.join(here, "..", "docs", "man", page + ".1")).read().replace("\\-", "-")
        named = set(re.findall(r"/usr/share/doc/attnscope/([\w.-]+)", text))
        check(named, f"{page}(1) names its documents")
        want += [f"share/doc/attnscope/{name}" for name in named]
    want.append("share/doc/attnscope/README.md")
    for rel in want:
        check(os.path.isfile(os.path.join(prefix, rel)), f"installed {rel}")
    for rel in ("bin/attnscope-cli", "bin/attnscope") if gui else ("bin/attnscope-cli",):
        check(os.access(os.path.join(prefix, rel), os.X_OK), f"{rel} is executable")
    if not gui:
        return
    for size in (16, 22, 24, 32, 48, 64, 128, 256):
        png = os.path.join(share, "icons/hicolor", f"{size}x{size}", "apps", f"{app_id}.png")
        check(os.path.isfile(png) and png_size(png) == (size, size),
              f"icon {size}x{size} is a {size} x {size} PNG")
    svg = open(os.path.join(share, "icons/hicolor/scalable/apps", f"{app_id}.svg")).read()
    check(svg.startswith("<svg") and "viewBox=\"0 0 256 256\"" in svg, "the scalable icon is an SVG")


def check_desktop_files(prefix, app_id, work):
    desktop = os.path.join(prefix, "share/applications", f"{app_id}.desktop")
    metainfo = os.path.join(prefix, "share/metainfo", f"{app_id}.metainfo.xml")
    for tool, args, path in (("desktop-file-validate", [], desktop),
                             ("appstreamcli", ["validate", "--no-net", "--pedantic"], metainfo)):
        if not check(shutil.which(tool) is not None,
                     f"{tool} is installed (scripts/install-deps.sh installs it)"):
            continue
        r = run([tool] + args + [path], work)
        check(r.returncode == 0, f"{tool} accepts {os.path.basename(path)}: "
              + (r.stdout + r.stderr).strip().replace("\n", " | ")[:400])
    entry = dict(line.split("=", 1) for line in open(desktop).read().splitlines() if "=" in line)
    check(entry.get("Icon") == app_id, f"the launcher's Icon is {app_id}")
    app = os.path.join(prefix, "bin", "attnscope")
    check(entry.get("Exec", "").split() == [app, "%f"],
          f"the launcher runs {app} by its full path (PREFIX/bin need not be on PATH): "
          f"{entry.get('Exec')!r}")
    check(entry.get("TryExec") == app, f"TryExec is {app}: {entry.get('TryExec')!r}")
    types = entry.get("MimeType", "").split(";")
    for t in ("application/json", "text/csv", "application/x-npy", "application/x-safetensors",
              "application/x-pytorch-checkpoint"):
        check(t in types, f"the launcher opens {t}: {entry.get('MimeType')!r}")
    mime = open(os.path.join(prefix, "share/mime/packages", f"{app_id}.xml")).read()
    for t in ("application/x-npy", "application/x-safetensors", "application/x-pytorch-checkpoint"):
        check(f'type="{t}"' in mime, f"the MIME package defines {t}")
    check(entry.get("StartupWMClass") == "attnscope", "the launcher names the window's class")
    meta = open(metainfo).read()
    for part in (f"<launchable type=\"desktop-id\">{app_id}.desktop</launchable>",
                 "<screenshot type=\"default\">", "<description>", "<release version="):
        check(part in meta, f"the metainfo has {part}")


def check_programs(prefix, work, gui, version, app_id):
    """Runs the installed programs from `work`, away from the source tree."""
    env = clean_env(work)
    data = os.path.join(prefix, "share", "attnscope")
    cli = os.path.join(prefix, "bin", "attnscope-cli")
    r = run([cli, "--version"], work, env)
    check(r.returncode == 0 and r.stdout.splitlines() == [f"attnscope-cli {version}",
                                                          f"data: {data}"],
          f"the installed CLI reads its data from {data}: {r.stdout!r} {r.stderr!r}")
    r = run([cli, "tokenize", "--text", "Hello, world"], work, env)
    check(r.returncode == 0 and "15496" in r.stdout,
          f"the installed CLI tokenizes with its vocabulary ('Hello' is 15496): {r.stderr!r}")
    if shutil.which("man"):
        page = run(["man", "-M", os.path.join(prefix, "share", "man"), "attnscope-cli"], work,
                   dict(env, MANPAGER="cat", PAGER="cat", MANWIDTH="80"))
        check(page.returncode == 0 and "attnscope-cli" in page.stdout and "SYNOPSIS" in page.stdout,
              f"man finds and shows the installed attnscope-cli page: {page.stderr.strip()[:200]!r}")
    out = os.path.join(work, "exports", "new")
    r = run([cli, "export", "--preset", "book", "--variant", "causal", "--format", "csv",
             "--out", out], work, env)
    check(r.returncode == 0 and os.path.isdir(out) and "created the folder" in r.stderr,
          f"the installed CLI exports into a folder it creates: {r.stderr!r}")
    if not gui:
        return
    app = os.path.join(prefix, "bin", "attnscope")
    r = run([app, "--version"], work, env)
    check(r.returncode == 0 and f"data: {data}" in r.stdout, f"the installed app's data: {r.stdout!r}")
    if not os.environ.get("DISPLAY"):
        check(False, "a display for the app's screenshot (run this test under xvfb-run)")
        return
    shot = os.path.join(work, "shot.png")
    r = run([app, "--no-session", "--text", "Hello installed world", "--screenshot", shot],
            work, env)
    info = png_info(shot) if r.returncode == 0 and os.path.isfile(shot) else (0, 0, 0)
    check(info[:2] == (1600, 1000) and info[2] > 20,
          f"the installed app takes a 1600 x 1000 screenshot on typed text (not blank): "
          f"{info} {r.stderr.strip()[:300]!r}")


def launch_from_menu_entry(prefix, app_id, work):
    """Starts the app as a desktop's menu does: the entry's Exec line with %f
    replaced by a file to open, with a PATH that does not hold the prefix's
    bin/. The window must appear with the entry's class and the app must quit
    cleanly on SIGTERM."""
    desktop = os.path.join(prefix, "share/applications", f"{app_id}.desktop")
    entry = dict(line.split("=", 1) for line in open(desktop).read().splitlines() if "=" in line)
    csv = os.path.join(work, "menu-embeddings.csv")
    with open(csv, "w") as f:
        f.write(",x,y,z\nattention,0.9,0.1,0.3\nis,0.2,0.8,0.5\nall,0.4,0.4,0.9\n")
    argv = [csv if word == "%f" else word for word in entry["Exec"].split()]
    env = clean_env(work)
    env["PATH"] = "/usr/bin:/bin"
    env["ATTNSCOPE_FILE_DIALOG"] = "builtin"
    proc = subprocess.Popen(argv, cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        found = run(["xdotool", "search", "--sync", "--class", entry["StartupWMClass"]], work,
                    env, timeout=60)
        check(found.returncode == 0 and found.stdout.strip() != "",
              f"the menu entry's Exec ({entry['Exec']}) opens a window of class "
              f"{entry['StartupWMClass']}")
    except subprocess.TimeoutExpired:
        check(False, "the menu entry's Exec opens a window within 60 s")
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=30)
        check(proc.returncode == 0, f"the app started from the menu entry quits cleanly: {err[-300:]!r}")
    except subprocess.TimeoutExpired:
        proc.kill()
        check(False, "the app started from the menu entry quits within 30 s of SIGTERM")


def check_package(build, work, app_id, version, gui):
    pkg = os.path.join(work, "package")
    os.makedirs(pkg)
    r = run(["cpack", "-G", "DEB", "-B", pkg, "--config",
             os.path.join(build, "CPackConfig.cmake")], work, timeout=600)
    debs = [f for f in os.listdir(pkg) if f.endswith(".deb")]
    if not check(r.returncode == 0 and len(debs) == 1,
                 f"cpack makes one .deb: {(r.stdout + r.stderr)[-600:]!r}"):
        return
    deb = os.path.join(pkg, debs[0])
    fields = run(["dpkg-deb", "-f", deb, "Package", "Version", "Depends"], work).stdout
    info = dict(line.split(": ", 1) for line in fields.splitlines() if ": " in line)
    check(info.get("Package") == "attnscope", f"the package is attnscope: {info}")
    check(info.get("Version") == version, f"the package's version is {version}: {info}")
    depends = info.get("Depends", "")
    wanted = ["libzip", "libcurl4", "libstdc++6", "libgomp1"]
    if gui:
        wanted += ["libglfw3", "libgl1", "fonts-dejavu-core"]
    for lib in wanted:
        check(lib in depends, f"Depends names {lib}: {depends}")
    if gui:
        recommends = run(["dpkg-deb", "-f", deb, "Recommends"], work).stdout
        for font in ("fonts-droid-fallback", "fonts-nanum", "fonts-symbola"):
            check(font in recommends, f"Recommends names {font}: {recommends.strip()}")
    listing = run(["dpkg-deb", "-c", deb], work).stdout
    for rel in ["./usr/bin/attnscope-cli", "./usr/share/attnscope/gpt2/encoder.json"] + (
            ["./usr/bin/attnscope", f"./usr/share/applications/{app_id}.desktop",
             f"./usr/share/icons/hicolor/48x48/apps/{app_id}.png"] if gui else []):
        check(f" {rel}\n" in listing or listing.rstrip().endswith(" " + rel),
              f"the .deb holds {rel}")
    root = os.path.join(work, "unpacked")
    run(["dpkg-deb", "-x", deb, root], work)
    if gui:
        entry = open(os.path.join(root, "usr/share/applications", f"{app_id}.desktop")).read()
        check("Exec=/usr/bin/attnscope %f" in entry.splitlines(),
              "the .deb's launcher runs /usr/bin/attnscope")
    env = clean_env(work)
    r = run([os.path.join(root, "usr/bin/attnscope-cli"), "--version"], work, env)
    check(r.returncode == 0 and f"data: {os.path.join(root, 'usr/share/attnscope')}" in r.stdout,
          f"the unpacked .deb's CLI finds its data beside it: {r.stdout!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--id", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--gui", action="store_true")
    args = ap.parse_args()
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    prefix = os.path.join(work, "prefix")
    build = os.path.abspath(args.build)
    r = run(["cmake", "--install", build, "--prefix", prefix], work)
    if not check(r.returncode == 0, f"cmake --install: {r.stderr.strip()[:400]!r}"):
        return 1
    check_layout(prefix, args.id, args.gui)
    if args.gui:
        check_desktop_files(prefix, args.id, work)
        # The entry names the prefix it was installed to: started from there.
        if not os.environ.get("DISPLAY"):
            check(False, "a display to start the menu entry (run this test under xvfb-run)")
        elif check(shutil.which("xdotool") is not None, "xdotool is installed (install-deps.sh)"):
            launch_from_menu_entry(prefix, args.id, work)
    # A relocatable prefix: moved after installing, the programs still find their data.
    moved = os.path.join(work, "moved", "elsewhere")
    os.makedirs(os.path.dirname(moved))
    os.rename(prefix, moved)
    check_programs(moved, work, args.gui, args.version, args.id)
    check_package(build, work, args.id, args.version, args.gui)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
