#pragma once
// Usage errors that name the word that was wrong. CLI11 blames what it could not place
// ("The following argument was not expected: true" for `dlock run --wiat 5s x -- true`);
// this looks at the words again and says which option is unknown, for which subcommand, and
// what was probably meant.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace dlock::cli {

// The one-line message for a usage error while parsing `args` (argv without argv[0]);
// `parser_says` is CLI11's own message, used when nothing more precise can be said.
std::string explain_usage_error(const CLI::App& app, const std::vector<std::string>& args,
                                const std::string& parser_says);

}  // namespace dlock::cli
