# CLI11, header-only (Debian: libcli11-dev). Provides CLI11::CLI11.
find_package(CLI11 2 CONFIG REQUIRED)
