# stepsim_cli_test(NAME SCRIPT [MPI] [NO_STEPSIM] [ARGS arg...] [LABELS label...]
#                  [TIMEOUT seconds] [COST seconds] [PROCESSORS n] [SKIP_RETURN_CODE code]
#                  [ENVIRONMENT VAR=value...])
# Registers the command-line test cli.NAME: tests/cli/SCRIPT (bash for .sh, python3 for .py) run
# as
#   SCRIPT <stepsim> [<mpiexec>] ARGS... [<mpiexec flags>...]
#   MPI         the script gets mpiexec second and the mpiexec flags last (it reads them as "$@"
#               after its other arguments: tests/cli/lib.sh's run_matrix and expect_error use
#               them);
#   NO_STEPSIM  the script does not get the executable first (ARGS only);
#   LABELS      default "cli"; add "asan" for the sanitizer pass (scripts/test.sh);
#   TIMEOUT     default 600 s;
#   COST        expected seconds in Release: ctest -j starts the long tests first;
#   ENVIRONMENT added to STEPSIM_TEST_ENV (OMP_WAIT_POLICY, ASan's options).
# Example: stepsim_cli_test(run run.sh MPI ARGS ${PROJECT_SOURCE_DIR}/workloads COST 40)
function(stepsim_cli_test name script)
  cmake_parse_arguments(PARSE_ARGV 2 T "MPI;NO_STEPSIM"
                        "TIMEOUT;COST;PROCESSORS;SKIP_RETURN_CODE" "ARGS;LABELS;ENVIRONMENT")
  if(T_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "stepsim_cli_test(${name}): unknown arguments ${T_UNPARSED_ARGUMENTS}")
  endif()
  set(path ${PROJECT_SOURCE_DIR}/tests/cli/${script})
  if(NOT EXISTS ${path})
    message(FATAL_ERROR "stepsim_cli_test(${name}): no script ${path}")
  endif()
  if(script MATCHES "\\.py$")
    set(command /usr/bin/python3 ${path})
  else()
    set(command bash ${path})
  endif()
  if(NOT T_NO_STEPSIM)
    list(APPEND command $<TARGET_FILE:stepsim>)
  endif()
  if(T_MPI)
    list(APPEND command ${MPIEXEC_EXECUTABLE})
  endif()
  list(APPEND command ${T_ARGS})
  if(T_MPI)
    list(APPEND command ${STEPSIM_MPIEXEC_FLAGS})
  endif()
  add_test(NAME cli.${name} COMMAND ${command})
  if(NOT T_LABELS)
    set(T_LABELS cli)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  set(env ${STEPSIM_TEST_ENV} ${T_ENVIRONMENT})
  set_tests_properties(cli.${name} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
                       ENVIRONMENT "${env}")
  foreach(p COST PROCESSORS SKIP_RETURN_CODE)
    if(DEFINED T_${p})
      set_tests_properties(cli.${name} PROPERTIES ${p} ${T_${p}})
    endif()
  endforeach()
endfunction()
