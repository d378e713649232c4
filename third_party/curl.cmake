# libcurl (Debian: libcurl4-openssl-dev), found with CMake's FindCURL.
# Provides CURL::libcurl, which the engine's hub room (core/src/hub) links to
# pull models from the Hugging Face Hub over HTTPS.
include_guard(GLOBAL)

find_package(CURL 7.85 REQUIRED)
