/*
 * fuzz_smi.c - libFuzzer harness for the nvidia-smi CSV parser:
 * mgpu_gpu_parse_smi_csv() on arbitrary bytes must return 0 or an error,
 * never read out of bounds. On success the list must be consistent, and
 * CUDA_VISIBLE_DEVICES (the input's first bytes as the mask) and the
 * selection applied to it must keep it so.
 */
#include <stddef.h> /* size_t */
#include <stdint.h> /* uint8_t */
#include <stdlib.h> /* abort */
#include <string.h> /* memcpy, strlen */

#include "gpu/gpu.h" /* mgpu_gpu_parse_smi_csv, mgpu_gpu_apply_visible */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct mgpu_gpu_list list;
static struct mgpu_gpu_selection sel;

static void check_list(void)
{
	int i;

	if (list.n < 0 || list.n > MGPU_GPU_MAX || list.nvisible < 0 || list.nvisible > list.n)
		abort();
	for (i = 0; i < list.n; i++) {
		const struct mgpu_gpu *g = &list.gpu[i];
		if (g->index != (i < list.nvisible ? i : -1) || g->smi_index < 0)
			abort();
		if (strlen(g->name) >= sizeof g->name || strlen(g->uuid) >= sizeof g->uuid ||
		    strlen(g->pci_bus_id) >= sizeof g->pci_bus_id)
			abort();
	}
}

static void check_selection(void)
{
	char seen[MGPU_GPU_MAX] = { 0 };
	int i;

	if (sel.n < 0 || sel.n > list.nvisible || sel.n > sel.neligible)
		abort();
	for (i = 0; i < sel.n; i++) {
		if (sel.pick[i] < 0 || sel.pick[i] >= list.nvisible || seen[sel.pick[i]]++)
			abort();
		if (i && list.gpu[sel.pick[i]].mem_total_bytes >
			     list.gpu[sel.pick[i - 1]].mem_total_bytes)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mgpu_gpu_policy p;
	char mask[33];
	size_t k = size < 32 ? size : 32;

	if (mgpu_gpu_parse_smi_csv((const char *)data, size, "fuzz", &list) < 0)
		return 0;
	if (list.nvisible != list.n)
		abort();
	check_list();
	memcpy(mask, data, k);
	mask[k] = '\0';
	mgpu_gpu_apply_visible(&list, mask);
	check_list();
	mgpu_gpu_policy_init(&p);
	p.min_memory_gb = 0;
	p.include_display = (int)(size & 1);
	p.max_used_pct = (size & 2) ? 50 : -1;
	if (mgpu_gpu_select(&list, &p, &sel) < 0)
		abort();
	check_selection();
	return 0;
}
