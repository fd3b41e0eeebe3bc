#pragma once
// `dlock doctor` for a SQLite lock file: its file system (a network or FUSE one is refused at
// open, file_system.hpp) and who can take locks in it (its mode and group).

#include <dlock/doctor.hpp>
#include <string>
#include <vector>

namespace dlock::detail::sqlite {

std::vector<check_finding> file_findings(const std::string& path);

}  // namespace dlock::detail::sqlite
