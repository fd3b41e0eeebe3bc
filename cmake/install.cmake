# cmake --install: headers, libdlock and its backend plug-ins, the dlock CLI (with its man page
# and bash completion), a CMake package (one component per plug-in) and pkg-config files.
# Install components, one Debian package each (cmake/package.cmake): lib (libdlock), one per
# plug-in (libdlock-<name>), dev (headers, .so links, CMake and pkg-config files), cli (dlock).
include(CMakePackageConfigHelpers)

install(TARGETS dlock EXPORT dlockTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT lib NAMELINK_COMPONENT dev
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT lib
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# Each plug-in next to libdlock (where the core looks for it), with an export set of its own:
# find_package(dlock COMPONENTS redis) loads dlock-redis-targets.cmake (target dlock::redis).
foreach(b IN LISTS DLOCK_PLUGIN_BACKENDS)
  if(TARGET dlock_${b}_plugin)
    install(TARGETS dlock_${b}_plugin EXPORT dlock-${b}-targets
      LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT ${b} NAMELINK_COMPONENT dev
      ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
    # In the plug-in's own package: the component is found exactly when the plug-in is there.
    install(EXPORT dlock-${b}-targets NAMESPACE dlock:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dlock
            COMPONENT ${b})
    list(APPEND DLOCK_INSTALLED_PLUGINS ${b})
  endif()
endforeach()
# libdlock-prometheus: a library of its own (package libdlock-prometheus), exported as the
# CMake component prometheus (dlock::prometheus), with dlock-prometheus.pc; its header is in
# dev with the others, and only when it is built.
if(TARGET dlock_prometheus)
  install(TARGETS dlock_prometheus EXPORT dlock-prometheus-targets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT prometheus NAMELINK_COMPONENT dev
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
  install(EXPORT dlock-prometheus-targets NAMESPACE dlock:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dlock
          COMPONENT prometheus)
  set(_dlock_no_prometheus_header "")
else()
  set(_dlock_no_prometheus_header PATTERN prometheus.hpp EXCLUDE)
endif()
install(DIRECTORY include/dlock DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
        ${_dlock_no_prometheus_header})
if(TARGET dlock_cli)
  install(TARGETS dlock_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
  install(FILES man/dlock.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT cli)
  install(FILES completion/dlock.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
          RENAME dlock COMPONENT cli)
endif()

install(EXPORT dlockTargets NAMESPACE dlock:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dlock
        COMPONENT dev)
configure_package_config_file(cmake/dlockConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/dlockConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dlock)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/dlockConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dlockConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/dlockConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dlock COMPONENT dev)

# Relocatable: the prefix is found relative to the .pc file itself.
file(RELATIVE_PATH DLOCK_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
configure_file(cmake/dlock.pc.in ${CMAKE_CURRENT_BINARY_DIR}/dlock.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dlock.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT dev)
foreach(b IN LISTS DLOCK_INSTALLED_PLUGINS)
  set(DLOCK_PLUGIN_NAME ${b})
  configure_file(cmake/dlock-plugin.pc.in ${CMAKE_CURRENT_BINARY_DIR}/dlock-${b}.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dlock-${b}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
          COMPONENT dev)
endforeach()
if(TARGET dlock_prometheus)
  configure_file(cmake/dlock-prometheus.pc.in ${CMAKE_CURRENT_BINARY_DIR}/dlock-prometheus.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dlock-prometheus.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
endif()
