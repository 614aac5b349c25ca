# Writes a program's man page with help2man from the built program's own --help, so that the page
# cannot drift from the binary. For a program with subcommands (CLI11 lists them under
# "Subcommands:" in its help), every subcommand's --help, recursively (`pipemare runs list`), goes
# into a COMMANDS section, verbatim. Run by the build (app/CMakeLists.txt):
#   cmake -DHELP2MAN=/usr/bin/help2man -DPROGRAM=build/bin/pipemare -DNAME="one line" -DVERSION=0.1.0
#         -DOUT=build/man/pipemare.1 [-DINCLUDE=resources/man/pipemare.h2m] [-DSUBCOMMANDS=ON]
#         -P scripts/manpage.cmake
# INCLUDE: a help2man include file with the sections no --help holds (ENVIRONMENT, FILES, SEE ALSO).
cmake_minimum_required(VERSION 3.24)
foreach(_v HELP2MAN PROGRAM NAME VERSION OUT)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "manpage.cmake: -D${_v}=... is required")
  endif()
endforeach()
get_filename_component(_prog_name "${PROGRAM}" NAME)
get_filename_component(_out_dir "${OUT}" DIRECTORY)
file(MAKE_DIRECTORY "${_out_dir}")

# The help of `PROGRAM ARGN --help` (exit status 0 required), with the program's path as invoked
# (CLI11 prints argv[0] in its usage line) replaced by its name.
function(help_of out_var)
  execute_process(COMMAND "${PROGRAM}" ${ARGN} --help
                  OUTPUT_VARIABLE _text ERROR_VARIABLE _err RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "manpage.cmake: `${PROGRAM} ${ARGN} --help` failed (${_rc}): ${_err}")
  endif()
  string(REPLACE "${PROGRAM}" "${_prog_name}" _text "${_text}")
  set(${out_var} "${_text}" PARENT_SCOPE)
endfunction()

# The names under "Subcommands:" in a CLI11 help text: lines "  name   description"; a wrapped
# description continues on lines that start with more spaces.
function(subcommands_of text out_var)
  set(_names "")
  string(FIND "${text}" "\nSubcommands:\n" _at)
  if(NOT _at EQUAL -1)
    string(SUBSTRING "${text}" ${_at} -1 _section)
    string(LENGTH "\nSubcommands:" _skip)
    string(SUBSTRING "${_section}" ${_skip} -1 _section)
    string(FIND "${_section}" "\n\n" _end)
    if(NOT _end EQUAL -1)
      string(SUBSTRING "${_section}" 0 ${_end} _section)
    endif()
    string(REGEX MATCHALL "\n  [A-Za-z0-9][A-Za-z0-9_-]*" _lines "${_section}")
    foreach(_l IN LISTS _lines)
      string(STRIP "${_l}" _l)
      list(APPEND _names "${_l}")
    endforeach()
  endif()
  set(${out_var} "${_names}" PARENT_SCOPE)
endfunction()

# Text as a roff no-fill block: backslashes and minus signs escaped, and a line that would read as
# a roff request (leading . or ') or as help2man include syntax (leading [ or /) guarded with \&.
function(roff_block text out_var)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REPLACE "-" "\\-" text "${text}")
  set(text "\n${text}")
  string(REGEX REPLACE "\n([.'/])" "\n\\\\&\\1" text "${text}")
  string(REGEX REPLACE "\n\\[" "\n\\\\&[" text "${text}")
  string(REGEX REPLACE "\n+$" "" text "${text}")
  set(${out_var} ".nf${text}\n.fi\n" PARENT_SCOPE)
endfunction()

set(_commands "")
# Depth-first over the subcommand tree below `PROGRAM prefix_list`, whose help is `help`:
# `PROGRAM a b --help` for every path a b, each run once.
function(add_commands prefix_list help)
  subcommands_of("${help}" _subs)
  foreach(_s IN LISTS _subs)
    set(_path ${prefix_list} ${_s})
    help_of(_sub_help ${_path})
    roff_block("${_sub_help}" _block)
    list(JOIN _path " " _title)
    string(APPEND _commands ".SS \"${_prog_name} ${_title}\"\n${_block}")
    add_commands("${_path}" "${_sub_help}")
  endforeach()
  set(_commands "${_commands}" PARENT_SCOPE)
endfunction()

set(_include "")
if(SUBCOMMANDS)
  help_of(_top_help)
  add_commands("" "${_top_help}")
  if(_commands STREQUAL "")
    message(FATAL_ERROR "manpage.cmake: `${PROGRAM} --help` lists no subcommands")
  endif()
  string(APPEND _include "[COMMANDS]\nEach command's own \\fB\\-\\-help\\fR:\n${_commands}\n")
endif()
if(DEFINED INCLUDE AND NOT INCLUDE STREQUAL "")
  file(READ "${INCLUDE}" _extra)
  string(APPEND _include "${_extra}")
endif()
set(_include_file "${OUT}.h2m")
file(WRITE "${_include_file}" "${_include}")

execute_process(
  COMMAND "${HELP2MAN}" --no-info --section=1 "--name=${NAME}" "--version-string=${VERSION}"
          "--source=PipeMare Workbench ${VERSION}" "--include=${_include_file}" "--output=${OUT}.tmp" "${PROGRAM}"
  RESULT_VARIABLE _rc ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "manpage.cmake: help2man failed for ${PROGRAM} (${_rc}): ${_err}")
endif()
# The page must not name the build tree (help2man writes the program's name, not its path; this
# catches a help text that prints a path of its own).
file(READ "${OUT}.tmp" _page)
get_filename_component(_prog_dir "${PROGRAM}" DIRECTORY)
string(FIND "${_page}" "${_prog_dir}" _leak)
if(NOT _leak EQUAL -1)
  message(FATAL_ERROR "manpage.cmake: ${OUT} names the build directory ${_prog_dir}")
endif()
file(RENAME "${OUT}.tmp" "${OUT}")
file(REMOVE "${_include_file}")
