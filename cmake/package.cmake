# `make package` (cpack): Debian packages, one per install component (cmake/install.cmake):
#   libdlock          the core (sqlite://, memory://)
#   libdlock-<name>   one per backend plug-in, with its client library as a dependency
#   libdlock-dev      headers, .so links, CMake package (core) and pkg-config files
#   dlock             the CLI, its man page and bash completion
# A plug-in works only with the libdlock of its own version (docs/plugins.md), so every
# package depends on exactly that version. tests/install/package_test.sh unpacks them.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dlock)
set(CPACK_PACKAGE_VENDOR dlock)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "dlock developers <dlock@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
# The client libraries' packages from the binaries' NEEDED entries (dpkg-shlibdeps); libdlock
# itself, which no installed package provides yet, is the exact-version dependency below.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${DLOCK_LIBRARY_DIR})

set(_dlock_exact "libdlock (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_LIB_PACKAGE_NAME libdlock)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libdlock-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${_dlock_exact}")
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_CLI_PACKAGE_NAME dlock)
set(CPACK_DEBIAN_CLI_PACKAGE_DEPENDS "${_dlock_exact}")
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION utils)
set(CPACK_COMPONENTS_ALL lib dev cli)
set(_dlock_suggests "")
foreach(b IN LISTS DLOCK_PLUGIN_BACKENDS)
  if(TARGET dlock_${b}_plugin)
    string(TOUPPER ${b} B)
    set(CPACK_DEBIAN_${B}_PACKAGE_NAME libdlock-${b})
    set(CPACK_DEBIAN_${B}_PACKAGE_DEPENDS "${_dlock_exact}")
    set(CPACK_COMPONENT_${B}_DESCRIPTION "dlock's ${b} backend plug-in")
    list(APPEND CPACK_COMPONENTS_ALL ${b})
    list(APPEND _dlock_suggests "libdlock-${b} (= ${PROJECT_VERSION})")
  endif()
endforeach()
list(JOIN _dlock_suggests ", " CPACK_DEBIAN_CLI_PACKAGE_SUGGESTS)
set(CPACK_DEBIAN_LIB_PACKAGE_SUGGESTS "${CPACK_DEBIAN_CLI_PACKAGE_SUGGESTS}")
set(CPACK_COMPONENT_LIB_DESCRIPTION "dlock's core library (SQLite and in-memory backends)")
set(CPACK_COMPONENT_DEV_DESCRIPTION "dlock's headers, CMake package and pkg-config files")
set(CPACK_COMPONENT_CLI_DESCRIPTION "the dlock command-line tool")
include(CPack)
