/* taskgym's status-channel helper for docker sessions (see status_helper.py).
 *
 * usage: status-connect SOCKET PROGRAM [ARG...]
 * Connects to the Unix stream socket SOCKET, makes the connection its standard output and
 * execs PROGRAM: the shell that PROGRAM becomes keeps this process's pid, which the host
 * reads from the connection's credentials. Built static, so it runs in any image. */
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv) {
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (argc < 3 || strlen(argv[1]) >= sizeof address.sun_path) return 127;
    strcpy(address.sun_path, argv[1]);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) != 0) return 126;
    if (fd != 1 && (dup2(fd, 1) != 1 || close(fd) != 0)) return 125;
    execv(argv[2], argv + 2);
    return 124;
}
