# Backend plug-ins: libdlock-<name>.so, one per server backend (docs/plugins.md).
set(DLOCK_PLUGIN_BACKENDS redis zookeeper postgres mysql etcd)

# Exports dlock's symbols only (cmake/exports.map); -z defs: a plug-in that needs a symbol
# the core does not export fails to link here, not to load on a user's machine.
function(dlock_controlled_exports target)
  target_link_options(${target} PRIVATE
    -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/exports.map -Wl,-z,defs)
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/exports.map)
endfunction()

# dlock_add_plugin(NAME OBJECTS SOURCE...): libdlock-NAME from the backend's object library
# and its registration file; target dlock_NAME_plugin, alias and exported name dlock::NAME.
function(dlock_add_plugin name objects)
  set(t dlock_${name}_plugin)
  add_library(${t} SHARED ${ARGN})
  add_library(dlock::${name} ALIAS ${t})
  target_link_libraries(${t} PRIVATE ${objects} PUBLIC dlock)
  target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  set_target_properties(${t} PROPERTIES
    OUTPUT_NAME dlock-${name}
    EXPORT_NAME ${name}
    VERSION ${PROJECT_VERSION}
    SOVERSION ${DLOCK_SOVERSION}
    LIBRARY_OUTPUT_DIRECTORY ${DLOCK_LIBRARY_DIR})
  dlock_controlled_exports(${t})
  # A program links a plug-in to have it registered before main; nothing in the program uses
  # its symbols, so the toolchain's default --as-needed (Debian's g++) would drop it again.
  # Consumers of dlock::NAME therefore link with --no-as-needed from here on (the libraries
  # after it are kept too, which costs them nothing they did not ask for).
  target_link_options(${t} INTERFACE "LINKER:--no-as-needed")
endfunction()
