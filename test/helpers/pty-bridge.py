"""Runs a command in a real pseudo-terminal of a given size, for the CLI's terminal tests.

usage: python3 pty-bridge.py COLS ROWS -- COMMAND [ARGS...]

The child's terminal output is copied to this process's stdout; bytes on stdin are
typed into the terminal; lines on fd 3 ("resize COLS ROWS") change the window size,
and the kernel sends the child SIGWINCH as a real terminal does. Exits with the
child's exit code (128+N when a signal N ended it).
"""

import fcntl
import os
import pty
import select
import struct
import sys
import termios


def set_size(fd, cols, rows):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def main():
    cols, rows = int(sys.argv[1]), int(sys.argv[2])
    command = sys.argv[4:] if sys.argv[3] == "--" else sys.argv[3:]
    pid, master = pty.fork()
    if pid == 0:
        set_size(0, cols, rows)
        os.execvp(command[0], command)
    set_size(master, cols, rows)
    inputs = [master, 0]
    try:
        os.fstat(3)
        inputs.append(3)
    except OSError:
        pass
    control = b""
    while True:
        try:
            ready, _, _ = select.select(inputs, [], [])
        except InterruptedError:
            continue
        if master in ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                data = b""
            if not data:
                break
            os.write(1, data)
        if 0 in ready:
            data = os.read(0, 65536)
            if data:
                os.write(master, data)
            else:
                inputs.remove(0)
        if 3 in ready:
            data = os.read(3, 4096)
            if not data:
                inputs.remove(3)
            control += data
            while b"\n" in control:
                line, control = control.split(b"\n", 1)
                parts = line.decode().split()
                if len(parts) == 3 and parts[0] == "resize":
                    set_size(master, int(parts[1]), int(parts[2]))
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status):
        sys.exit(os.WEXITSTATUS(status))
    sys.exit(128 + os.WTERMSIG(status))


main()
