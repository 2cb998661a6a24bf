/*
 * selftest.h - mgpu-train --selftest: every op of every backend that has
 * a device, then a few training steps, against the CPU reference.
 */
#ifndef MGPU_TOOLS_TRAIN_SELFTEST_H
#define MGPU_TOOLS_TRAIN_SELFTEST_H

#include <stdio.h> /* FILE */

/* Rows on fp in format (enum mgpu_format); 1 on any mismatch, else 0. */
int train_selftest(FILE *fp, int format, int quiet);

#endif
