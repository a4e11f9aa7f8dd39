#pragma once
// App-internal: the tables crcrctl's admin commands print for people, one function per
// listing, each taking the admin API's JSON answer (CONTRACT.md §7). Listings end with a
// "(more: --cursor X)" line when the API has a next page.

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>

namespace crcrd::app {

/// j[key] as a cell: a string as is, another value as JSON, "-" when missing or null.
std::string text(const nlohmann::json& j, const char* key);

void print_runs(std::ostream& out, const nlohmann::json& page);
void print_run(std::ostream& out, const nlohmann::json& run);
void print_passes(std::ostream& out, const nlohmann::json& page);
void print_misses(std::ostream& out, const nlohmann::json& page);
void print_runners(std::ostream& out, const nlohmann::json& page);
void print_deliveries(std::ostream& out, const nlohmann::json& page);
void print_outbox(std::ostream& out, const nlohmann::json& page);

}  // namespace crcrd::app
