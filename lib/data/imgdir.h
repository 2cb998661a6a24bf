/*
 * imgdir.h - a directory of images in the class-per-folder layout that
 * torchvision's ImageFolder reads: root/CLASS/[...]/NAME.png|.jpg|.jpeg.
 *
 * Classes are the sub-folders of root in sorted (strcmp) order, numbered
 * from 0, and their names are kept as the set's class names. A class
 * folder's images are found in its sub-folders too (as ImageFolder walks
 * them) and read in sorted path order. Entries whose names start with a
 * dot are skipped (.ipynb_checkpoints), so are files of other extensions
 * and files directly in root. A class folder without images is an error,
 * as in ImageFolder. Images decode as data/image.h says; every image must
 * have the first one's size unless resize (H, W) is given. Errors name the
 * file.
 */
#ifndef MGPU_DATA_IMGDIR_H
#define MGPU_DATA_IMGDIR_H

#include <stdint.h> /* uint32_t */

#include "data/samples.h" /* struct mgpu_samples */

/* Does dir look like an image folder: at least one sub-folder, and no IDX
 * train-images file? */
int mgpu_imgdir_is(const char *dir);
/* Load dir into a new set out (zeroed on failure). resize: H, W or NULL. */
int mgpu_imgdir_load(const char *dir, const uint32_t *resize, struct mgpu_samples *out);

#endif
