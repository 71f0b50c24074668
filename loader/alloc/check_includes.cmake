# SPDX-License-Identifier: Apache-2.0
# cmake -DDIR=loader/alloc -P check_includes.cmake
#
# The allocator is a library of its own inside the loader: it may include
# the C library, include/ and its own headers, and of the loader only the
# logger ("../log.h").  An include of internal.h (by any path) or of any
# other header outside its folder fails the build, naming the file.
file(GLOB files ${DIR}/*.c ${DIR}/*.h)
set(bad "")
foreach(f IN LISTS files)
  file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include")
  foreach(l IN LISTS lines)
    if(l MATCHES "internal\\.h" OR (l MATCHES "[\"<][^\">]*\\.\\./" AND NOT l MATCHES "\"\\.\\./log\\.h\""))
      string(APPEND bad "\n  ${f}: ${l}")
    endif()
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "loader/alloc must include no loader header but ../log.h:${bad}")
endif()
