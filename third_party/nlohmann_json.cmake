# nlohmann/json, header-only (Debian: nlohmann-json3-dev). Provides nlohmann_json::nlohmann_json.
find_package(nlohmann_json 3.9 REQUIRED)
