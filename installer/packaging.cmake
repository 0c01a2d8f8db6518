# CPack: a .deb with the app, the CLI, the server (when built), the .desktop entry and the icon.
# installer/package-deb.sh builds a portable release and runs `cpack -G DEB` in it, which writes
# pagedchat_<version>_<arch>.deb.
# Runtime dependencies are Debian 12's packages of the libraries we link.

install(FILES ${PROJECT_SOURCE_DIR}/resources/pagedchat.desktop DESTINATION share/applications)
install(FILES ${PROJECT_SOURCE_DIR}/resources/icons/pagedchat.svg DESTINATION share/icons/hicolor/scalable/apps)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME pagedchat)
set(CPACK_PACKAGE_VENDOR "PagedChat")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Chat with local language models on a paged-KV engine")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "PagedChat developers <pagedchat@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Shared-library dependencies read from the binaries (dpkg-shlibdeps), plus the SQLite driver
# that Qt loads as a plugin at run time and so no binary names.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libqt6sql6-sqlite")
include(CPack)
