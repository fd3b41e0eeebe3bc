# cmake --install: headers, libdlock, the dlock CLI (with its man page and bash completion), a
# CMake package and a pkg-config file.
include(CMakePackageConfigHelpers)

install(TARGETS dlock EXPORT dlockTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/dlock DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET dlock_cli)
  install(TARGETS dlock_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(FILES man/dlock.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  install(FILES completion/dlock.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
          RENAME dlock)
endif()

install(EXPORT dlockTargets NAMESPACE dlock:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dlock)
configure_package_config_file(cmake/dlockConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/dlockConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dlock)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/dlockConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dlockConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/dlockConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/dlock)

# Relocatable: the prefix is found relative to the .pc file itself.
file(RELATIVE_PATH DLOCK_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
configure_file(cmake/dlock.pc.in ${CMAKE_CURRENT_BINARY_DIR}/dlock.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/dlock.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
