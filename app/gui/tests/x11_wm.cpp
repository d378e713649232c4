// x11_wm: the little of a window manager the Xvfb tests need, since Xvfb has
// none and without one nothing minimises or closes windows the way a desktop does.
//
//   x11_wm run     manage the screen until killed: map and configure windows
//                  as asked; minimise on WM_CHANGE_STATE (xdotool
//                  windowminimize, glfwIconifyWindow): unmap + WM_STATE
//                  Iconic; restore and focus on _NET_ACTIVE_WINDOW (xdotool
//                  windowactivate): map + WM_STATE Normal + _NET_ACTIVE_WINDOW
//                  on the root. Prints "ready" once it manages the screen.
//   x11_wm close WINDOW
//                  what a title bar's close button does: sends the window a
//                  WM_DELETE_WINDOW message (the app should quit cleanly).
#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <X11/Xutil.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace {

bool g_other_wm = false;

int on_error(Display*, XErrorEvent* e) {
  // Windows go away between an event and our answer (BadWindow): ignore.
  // BadAccess on the root's SubstructureRedirect: another manager runs.
  if (e->error_code == BadAccess) g_other_wm = true;
  return 0;
}

struct Atoms {
  Atom wm_state, wm_change_state, net_active, net_supported, net_check, net_wm_name, utf8;
};

Atoms atoms_of(Display* d) {
  return {XInternAtom(d, "WM_STATE", False),
          XInternAtom(d, "WM_CHANGE_STATE", False),
          XInternAtom(d, "_NET_ACTIVE_WINDOW", False),
          XInternAtom(d, "_NET_SUPPORTED", False),
          XInternAtom(d, "_NET_SUPPORTING_WM_CHECK", False),
          XInternAtom(d, "_NET_WM_NAME", False),
          XInternAtom(d, "UTF8_STRING", False)};
}

void set_wm_state(Display* d, const Atoms& a, Window w, long state) {
  const long data[2] = {state, None};
  XChangeProperty(d, w, a.wm_state, a.wm_state, 32, PropModeReplace,
                  reinterpret_cast<const unsigned char*>(data), 2);
}

void set_active(Display* d, const Atoms& a, Window root, Window w) {
  const long data[1] = {static_cast<long>(w)};
  XChangeProperty(d, root, a.net_active, XA_WINDOW, 32, PropModeReplace,
                  reinterpret_cast<const unsigned char*>(data), 1);
}

void show(Display* d, const Atoms& a, Window root, Window w) {
  XMapRaised(d, w);
  set_wm_state(d, a, w, NormalState);
  XSetInputFocus(d, w, RevertToPointerRoot, CurrentTime);
  set_active(d, a, root, w);
}

int run() {
  Display* d = XOpenDisplay(nullptr);
  if (!d) {
    std::fprintf(stderr, "error: cannot open the X display\n");
    return 1;
  }
  XSetErrorHandler(on_error);
  const Window root = DefaultRootWindow(d);
  const Atoms a = atoms_of(d);
  XSelectInput(d, root, SubstructureRedirectMask | SubstructureNotifyMask);
  XSync(d, False);
  if (g_other_wm) {
    std::fprintf(stderr, "error: another window manager runs on this display\n");
    return 1;
  }
  // EWMH: say which requests we answer (xdotool windowactivate checks), and
  // who we are.
  const long supported[1] = {static_cast<long>(a.net_active)};
  XChangeProperty(d, root, a.net_supported, XA_ATOM, 32, PropModeReplace,
                  reinterpret_cast<const unsigned char*>(supported), 1);
  const Window check = XCreateSimpleWindow(d, root, -10, -10, 1, 1, 0, 0, 0);
  const long check_id[1] = {static_cast<long>(check)};
  for (Window w : {root, check})
    XChangeProperty(d, w, a.net_check, XA_WINDOW, 32, PropModeReplace,
                    reinterpret_cast<const unsigned char*>(check_id), 1);
  const char name[] = "x11_wm";
  XChangeProperty(d, check, a.net_wm_name, a.utf8, 8, PropModeReplace,
                  reinterpret_cast<const unsigned char*>(name), sizeof name - 1);
  XSync(d, False);
  std::printf("ready\n");
  std::fflush(stdout);

  for (;;) {
    XEvent e;
    XNextEvent(d, &e);
    switch (e.type) {
      case MapRequest:
        show(d, a, root, e.xmaprequest.window);
        break;
      case ConfigureRequest: {
        const XConfigureRequestEvent& r = e.xconfigurerequest;
        XWindowChanges c{};
        c.x = r.x;
        c.y = r.y;
        c.width = r.width;
        c.height = r.height;
        c.border_width = r.border_width;
        c.sibling = r.above;
        c.stack_mode = r.detail;
        XConfigureWindow(d, r.window, static_cast<unsigned>(r.value_mask), &c);
        break;
      }
      case ClientMessage: {
        const XClientMessageEvent& m = e.xclient;
        if (m.message_type == a.wm_change_state && m.data.l[0] == IconicState) {
          XUnmapWindow(d, m.window);
          set_wm_state(d, a, m.window, IconicState);
        } else if (m.message_type == a.net_active) {
          show(d, a, root, m.window);
        }
        break;
      }
      default:
        break;
    }
    XFlush(d);
  }
}

int close_window(const char* id) {
  char* end = nullptr;
  const unsigned long w = std::strtoul(id, &end, 0);
  if (!end || *end || w == 0) {
    std::fprintf(stderr, "error: '%s' is not a window id\n", id);
    return 2;
  }
  Display* d = XOpenDisplay(nullptr);
  if (!d) {
    std::fprintf(stderr, "error: cannot open the X display\n");
    return 1;
  }
  XEvent e;
  std::memset(&e, 0, sizeof e);
  e.xclient.type = ClientMessage;
  e.xclient.window = w;
  e.xclient.message_type = XInternAtom(d, "WM_PROTOCOLS", False);
  e.xclient.format = 32;
  e.xclient.data.l[0] = static_cast<long>(XInternAtom(d, "WM_DELETE_WINDOW", False));
  e.xclient.data.l[1] = CurrentTime;
  const Status ok = XSendEvent(d, w, False, NoEventMask, &e);
  XSync(d, False);
  XCloseDisplay(d);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "run") == 0) return run();
  if (argc == 3 && std::strcmp(argv[1], "close") == 0) return close_window(argv[2]);
  std::fprintf(stderr, "usage: x11_wm run | x11_wm close WINDOW\n");
  return 2;
}
