import { constants, existsSync } from 'node:fs';
import {
  type FileHandle,
  lstat,
  mkdir,
  open,
  readdir,
  readlink,
  realpath,
  rmdir,
  unlink,
} from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, TroupeError } from '../errors.js';
import { isInside, showPath } from './sandbox.js';

/**
 * Opening files inside an area without the check-then-open race. A path
 * that passed `resolveInScope` can still be swapped for a symbolic link by a
 * concurrent writer (an exec tool of another agent) before the file tool
 * opens it. On Linux the file tools therefore walk from the area's root one
 * component at a time, each folder opened with O_NOFOLLOW | O_DIRECTORY and
 * the next name looked up in the open folder through `/proc/self/fd/N/`
 * (the equivalent of openat(2), which Node does not expose): no symbolic
 * link is followed anywhere on the way, so a swap makes the open fail
 * instead of leading outside. The descriptor's real path is checked once
 * more against the root. Elsewhere (no `/proc/self/fd`), the folder is opened
 * by path and its real path checked after the open.
 */

/** Whether open folders can be addressed as `/proc/self/fd/N` (Linux with /proc). */
export const HAS_DESCRIPTOR_PATHS: boolean =
  process.platform === 'linux' && existsSync('/proc/self/fd');

const FOLDER_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

// Windows cannot open a folder as a file (no O_DIRECTORY): folders are then checked by path.
const CAN_OPEN_FOLDERS = constants.O_DIRECTORY !== undefined;

/** What the walk needs of an open folder. */
type OpenFolder = Pick<FileHandle, 'fd' | 'stat' | 'close'>;

// A stand-in for an open folder where folders cannot be opened: checked with lstat, closes
// nothing, and its "descriptor" is never used (HAS_DESCRIPTOR_PATHS is false there).
async function checkedFolderPath(
  target: string,
  relative: string,
  label: string,
): Promise<OpenFolder> {
  const stats = await lstat(target).catch((error: unknown) => {
    throw folderError(relative, error);
  });
  if (!stats.isDirectory()) throw changed(relative, label);
  return {
    fd: -1,
    stat: (() => lstat(target)) as OpenFolder['stat'],
    close: async () => undefined,
  };
}

/** A folder inside an area, held open; files in it are addressed through `path`. */
export interface FolderHandle {
  /**
   * A path that names the open folder itself (`/proc/self/fd/N` on Linux),
   * so `path.join(handle.path, name)` looks `name` up in that very folder
   * even if the folder was moved or its path swapped for a link meanwhile.
   */
  path: string;
  /** The real path of the folder when it was opened (for messages). */
  realPath: string;
  close(): Promise<void>;
}

/** Options for `openFolderIn`. */
export interface OpenFolderOptions {
  /** Create missing folders on the way (write_file's parent folders). Default false. */
  create?: boolean;
  /** What the model calls the area in messages (default "the workspace"). */
  label?: string;
}

/**
 * Opens the folder `relative` (`/`-separated, from `resolveInScope`, no `..`)
 * under the real `root`, following no symbolic link on the way. A component
 * that is a link, or that changed into one, is refused with
 * `sandbox.escape`; a missing one is created when `options.create` is set.
 */
export async function openFolderIn(
  root: string,
  relative: string,
  options: OpenFolderOptions = {},
): Promise<FolderHandle> {
  const label = options.label ?? 'the workspace';
  const parts = componentsOf(relative);
  if (!HAS_DESCRIPTOR_PATHS) return openFolderByPath(root, parts, options, label);
  let current = await openFolder(root, relative, label);
  try {
    for (const part of parts) {
      const next = path.join(descriptorPath(current), part);
      if (options.create === true) {
        await mkdir(next).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'EEXIST') throw folderError(relative, error);
        });
      }
      const opened = await openFolder(next, relative, label);
      await current.close();
      current = opened;
    }
    const realPath = await readlink(descriptorPath(current));
    if (!isInside(root, realPath)) throw escaped(relative, label);
    const handle = current;
    return { path: descriptorPath(handle), realPath, close: () => handle.close() };
  } catch (error) {
    await current.close();
    throw error;
  }
}

/**
 * Opens the folder `name` in an open folder without following a link (a
 * link gives `sandbox.escape`), for walks that descend a tree.
 */
export async function openChildFolder(parent: FolderHandle, name: string): Promise<FolderHandle> {
  const target = path.join(parent.path, name);
  const relative = path.posix.join(parent.realPath, name);
  const handle = await openFolder(target, relative, 'the workspace');
  return {
    path: HAS_DESCRIPTOR_PATHS ? descriptorPath(handle) : target,
    realPath: relative,
    close: () => handle.close(),
  };
}

/**
 * Opens the file `name` in an open folder with `flags` plus O_NOFOLLOW (a
 * link is refused, never followed) and O_NONBLOCK (a FIFO cannot hang the
 * open); the caller checks the kind with `handle.stat()`.
 */
export function openFileIn(
  folder: FolderHandle,
  name: string,
  flags: number,
  mode?: number,
): Promise<FileHandle> {
  return open(
    path.join(folder.path, name),
    flags | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    mode,
  );
}

/**
 * Opens the file `relative` under the real `root` for `flags` without
 * following any link (see `openFolderIn` and `openFileIn`), and checks the
 * real path of the open descriptor against the root. A link, or a path that
 * changed while being opened, is refused with `sandbox.escape`; other open
 * errors (ENOENT …) are thrown as they are.
 */
export async function openFileInArea(
  root: string,
  relative: string,
  flags: number,
  label = 'the workspace',
): Promise<FileHandle> {
  const parts = componentsOf(relative);
  const name = parts.pop();
  if (name === undefined) {
    throw new TroupeError(
      'tool.refused',
      `${showPath(relative)} is a folder, not a file. Use list_dir to see what it holds.`,
    );
  }
  const folder = await openFolderIn(root, parts.join('/'), { label });
  let file: FileHandle;
  try {
    file = await openFileIn(folder, name, flags);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw changed(relative, label);
    throw error;
  } finally {
    await folder.close();
  }
  if (HAS_DESCRIPTOR_PATHS) {
    const real = await readlink(descriptorPath(file)).catch(() => '');
    if (!isInside(root, real)) {
      await file.close();
      throw escaped(relative, label);
    }
  }
  return file;
}

/**
 * Removes `name` from an open folder, recursively, without following any
 * link: a folder is opened with O_NOFOLLOW and emptied through its
 * descriptor, so a concurrent swap cannot send the removal outside. Missing
 * entries are fine.
 */
export async function removeIn(folder: FolderHandle, name: string): Promise<void> {
  const entry = path.join(folder.path, name);
  const stats = await lstat(entry).catch(() => undefined);
  if (stats === undefined) return;
  if (!stats.isDirectory()) {
    await unlink(entry).catch(ignoreMissing);
    return;
  }
  let inner: FileHandle;
  try {
    inner = await open(entry, FOLDER_FLAGS);
  } catch {
    // It turned into something else since the lstat (a link): remove that instead.
    await unlink(entry).catch(ignoreMissing);
    return;
  }
  const child: FolderHandle = HAS_DESCRIPTOR_PATHS
    ? { path: descriptorPath(inner), realPath: entry, close: () => inner.close() }
    : { path: entry, realPath: entry, close: () => inner.close() };
  try {
    for (const childName of await readdir(child.path)) await removeIn(child, childName);
  } finally {
    await child.close();
  }
  await rmdir(entry).catch(ignoreMissing);
}

function ignoreMissing(error: NodeJS.ErrnoException): void {
  if (error.code !== 'ENOENT') throw error;
}

function componentsOf(relative: string): string[] {
  const parts = relative.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) {
    throw new TroupeError('sandbox.escape', `Path ${showPath(relative)} holds "..": refused.`);
  }
  return parts;
}

function descriptorPath(handle: { fd: number }): string {
  return `/proc/self/fd/${handle.fd}`;
}

async function openFolder(target: string, relative: string, label: string): Promise<OpenFolder> {
  if (!CAN_OPEN_FOLDERS) return checkedFolderPath(target, relative, label);
  try {
    return await open(target, FOLDER_FLAGS);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // O_NOFOLLOW on a link gives ELOOP; O_DIRECTORY on a link or a file gives ENOTDIR.
    if (code === 'ELOOP' || code === 'ENOTDIR') throw changed(relative, label);
    throw folderError(relative, error);
  }
}

async function openFolderByPath(
  root: string,
  parts: readonly string[],
  options: OpenFolderOptions,
  label: string,
): Promise<FolderHandle> {
  const relative = parts.join('/');
  const target = path.join(root, ...parts);
  if (options.create === true) {
    await mkdir(target, { recursive: true }).catch((error) => {
      throw folderError(relative, error);
    });
  }
  const handle = await openFolder(target, relative, label);
  try {
    // Without descriptor paths, the best check left: after the open, the folder's path still
    // leads inside the root and to the very folder that was opened.
    const real = await realpath(target);
    if (!isInside(root, real)) throw escaped(relative, label);
    const [opened, current] = await Promise.all([handle.stat(), lstat(real)]);
    if (opened.ino !== current.ino || opened.dev !== current.dev) throw changed(relative, label);
    return { path: real, realPath: real, close: () => handle.close() };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

function escaped(relative: string, label: string): TroupeError {
  return new TroupeError(
    'sandbox.escape',
    `Path ${showPath(relative)} leads outside ${label}; refused.`,
  );
}

function changed(relative: string, label: string): TroupeError {
  return new TroupeError(
    'sandbox.escape',
    `Path ${showPath(relative)} goes through a symbolic link or changed while it was being opened (a folder swapped for a link?); refused. Only paths inside ${label} without links out are allowed.`,
  );
}

function folderError(relative: string, error: unknown): TroupeError {
  return new TroupeError(
    'tool.failed',
    `Could not open the folder ${showPath(relative || '.')}: ${errorMessage(error)}.`,
    { cause: error },
  );
}
