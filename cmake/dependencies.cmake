# Third-party libraries, all from Debian 12 packages (installed by scripts/install-deps.sh).
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json REQUIRED)

# The client libraries only of the backends built (each links only its own plug-in).
if(DLOCK_WITH_ZOOKEEPER)
  # ZooKeeper's C client (libzookeeper-mt-dev) ships neither a pkg-config file nor a CMake
  # package: find the header and the multi-threaded library by hand.
  find_path(ZOOKEEPER_INCLUDE_DIR zookeeper/zookeeper.h REQUIRED)
  find_library(ZOOKEEPER_MT_LIBRARY zookeeper_mt REQUIRED)
  add_library(zookeeper::zookeeper_mt UNKNOWN IMPORTED)
  set_target_properties(zookeeper::zookeeper_mt PROPERTIES
    IMPORTED_LOCATION ${ZOOKEEPER_MT_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${ZOOKEEPER_INCLUDE_DIR}
    # The synchronous API is declared only for the multi-threaded library.
    INTERFACE_COMPILE_DEFINITIONS THREADED)
endif()
if(DLOCK_WITH_REDIS)
  pkg_check_modules(hiredis REQUIRED IMPORTED_TARGET hiredis)
endif()
if(DLOCK_WITH_POSTGRES)
  pkg_check_modules(LIBPQ REQUIRED IMPORTED_TARGET libpq)
endif()
if(DLOCK_WITH_PROMETHEUS)
  # Debian's prometheus-cpp-dev (1.0.1); only libdlock-prometheus links it.
  find_package(prometheus-cpp CONFIG REQUIRED)
endif()
if(DLOCK_WITH_MYSQL)
  pkg_check_modules(LIBMARIADB REQUIRED IMPORTED_TARGET libmariadb)
endif()
if(DLOCK_WITH_ETCD)
  # Debian's gRPC 1.51 CMake package. Its targets file checks that every grpc_*_plugin exists,
  # so protobuf-compiler-grpc must be installed; it finds protobuf through CMake's FindProtobuf
  # (module mode: Debian ships no protobuf CMake package), which gives protobuf::protoc.
  find_package(Protobuf REQUIRED)
  find_package(gRPC CONFIG REQUIRED)
endif()
