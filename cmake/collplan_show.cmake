# Writes `collplan show PLAN` to OUT (a custom command step of
# collplan_add_plan(... TEXT)). Run as `cmake -DCOLLPLAN=... -DPLAN=... -DOUT=... -P`.
execute_process(COMMAND "${COLLPLAN}" show "${PLAN}" OUTPUT_FILE "${OUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "collplan show ${PLAN} failed (${rc})")
endif()
