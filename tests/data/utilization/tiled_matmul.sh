#!/bin/sh
# Emits kgate protocol lines reproducing XProf's tiled-matmul case study on one TPU v7x
# TensorCore: a kernel window, its time, and 16-bit cumulative counters sampled every 1 us
# (1900 cycles per sample at 1.9 GHz, so `cycles` wraps several times).
# BUFFERS=3 is the triple-buffered kernel (88 us); BUFFERS=1 the single-buffered one
# (125.5 us) whose MXU stalls on HBM, with sync-wait spikes every fourth microsecond.
rep=${KGATE_REPETITION:-0}
awk -v rep="$rep" -v buffers="${BUFFERS:-3}" 'BEGIN {
  if (buffers == 1) { us = 125.5; busy2 = 1000; spike = 900 } else { us = 88; busy2 = 1500; spike = 0 }
  start = 1000000 * rep
  end = start + us * 1000
  printf "{\"metric\": \"kernel_time\", \"value\": %.1f, \"unit\": \"us\", \"source\": \"timer\"}\n", us + (rep % 3) * 0.2
  printf "{\"kernel\": \"matmul\", \"start_ns\": %d, \"end_ns\": %d}\n", start, end
  c = 0; b1 = 0; b2 = 0; sw = 0
  for (t = start; t <= end; t += 1000) {
    printf "{\"counter\": \"cycles\", \"t_ns\": %d, \"value\": %d, \"unit\": \"cycles\", \"bits\": 16}\n", t, c % 65536
    printf "{\"counter\": \"mxu_busy_1\", \"t_ns\": %d, \"value\": %d, \"unit\": \"cycles\", \"bits\": 16}\n", t, b1 % 65536
    printf "{\"counter\": \"mxu_busy_2\", \"t_ns\": %d, \"value\": %d, \"unit\": \"cycles\", \"bits\": 16}\n", t, b2 % 65536
    printf "{\"counter\": \"sync_wait\", \"t_ns\": %d, \"value\": %d, \"unit\": \"cycles\", \"bits\": 16}\n", t, sw % 65536
    n = (t - start) / 1000
    c += 1900; b1 += 200; b2 += busy2 + (rep % 2) * 10
    sw += 40 + ((n % 4 == 3) ? spike : 0)
  }
}' >> "$KGATE_PROTOCOL_FILE"
