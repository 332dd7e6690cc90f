/*
 * with_tetherd.c — runs a command beside a real tetherd of its own, the
 * way the C harness runs every lesson and case that talks to the daemon:
 *
 *     with_tetherd TETHERD -- COMMAND [ARGS...]
 *
 * 1. makes a temporary directory and starts `TETHERD --address
 *    unix:DIR/tetherd.sock --data-dir DIR/data` with NOTIFY_SOCKET pointing
 *    at a datagram socket of its own, and waits for READY=1 (systemd's
 *    readiness protocol: no sleeping, no polling of the socket file);
 * 2. runs COMMAND with TETHER_ADDRESS=unix:DIR/tetherd.sock and
 *    TETHERD_PID set;
 * 3. supervises the daemon meanwhile, as systemd's Restart=always would:
 *    when it dies (a test may kill it with SIGKILL to play a crash), it is
 *    started again on the same socket and data directory, and waited for;
 * 4. when COMMAND ends, stops the daemon with SIGTERM and waits for it.
 *
 * Exits with COMMAND's status; 1 when the daemon could not start or did
 * not stop cleanly (its log is printed then, and whenever COMMAND failed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[] = "/tmp/with-tetherd.XXXXXX";
/* Short enough for a sockaddr_un's 108 bytes. */
static char address[100], notify_path[100], data_dir[100], log_path[100];

static void print_log(void) {
  FILE *f = fopen(log_path, "r");
  char line[1024];
  if (!f) return;
  fprintf(stderr, "--- tetherd's log (%s) ---\n", log_path);
  while (fgets(line, sizeof line, f)) fputs(line, stderr);
  fclose(f);
}

static int notify_socket(void) {
  struct sockaddr_un sa;
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path, notify_path, strlen(notify_path) + 1);
  unlink(notify_path);
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Starts the daemon and waits for READY=1; returns its pid, or -1. */
static pid_t start_daemon(const char *tetherd) {
  int fd = notify_socket();
  pid_t pid;
  time_t deadline = time(NULL) + 60;
  if (fd < 0) {
    perror("with_tetherd: notify socket");
    return -1;
  }
  pid = fork();
  if (pid == 0) {
    int out = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (out >= 0) {
      dup2(out, 1);
      dup2(out, 2);
    }
    setenv("NOTIFY_SOCKET", notify_path, 1);
    execl(tetherd, tetherd, "--address", address, "--data-dir", data_dir, "--progress-interval", "500", (char *)NULL);
    fprintf(stderr, "with_tetherd: cannot run %s: %s\n", tetherd, strerror(errno));
    _exit(127);
  }
  while (pid > 0) {
    struct pollfd p = {fd, POLLIN, 0};
    char buf[512];
    int status;
    if (poll(&p, 1, 250) > 0) {
      ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
      if (n > 0) {
        buf[n] = 0;
        if (strstr(buf, "READY=1")) break;
      }
    }
    if (waitpid(pid, &status, WNOHANG) == pid) {
      fprintf(stderr, "with_tetherd: %s exited before it was ready\n", tetherd);
      print_log();
      pid = -1;
    } else if (time(NULL) > deadline) {
      fprintf(stderr, "with_tetherd: %s sent no READY=1 within 60 s\n", tetherd);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      print_log();
      pid = -1;
    }
  }
  close(fd);
  return pid;
}

static void remove_tree(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "with_tetherd: could not remove %s\n", dir);
}

int main(int argc, char **argv) {
  const char *tetherd;
  pid_t daemon, test;
  int status = 0, test_status = 0, rc;
  char pid_text[32];
  if (argc < 4 || strcmp(argv[2], "--") != 0) {
    fprintf(stderr, "usage: %s TETHERD -- COMMAND [ARGS...]\n", argv[0]);
    return 2;
  }
  tetherd = argv[1];
  if (!mkdtemp(dir)) {
    perror("with_tetherd: mkdtemp");
    return 1;
  }
  snprintf(address, sizeof address, "unix:%s/tetherd.sock", dir);
  snprintf(notify_path, sizeof notify_path, "%s/notify", dir);
  snprintf(data_dir, sizeof data_dir, "%s/data", dir);
  snprintf(log_path, sizeof log_path, "%s/tetherd.log", dir);

  daemon = start_daemon(tetherd);
  if (daemon < 0) {
    remove_tree();
    return 1;
  }
  snprintf(pid_text, sizeof pid_text, "%d", (int)daemon);
  test = fork();
  if (test == 0) {
    setenv("TETHER_ADDRESS", address, 1);
    setenv("TETHERD_PID", pid_text, 1);
    execvp(argv[3], argv + 3);
    fprintf(stderr, "with_tetherd: cannot run %s: %s\n", argv[3], strerror(errno));
    _exit(127);
  }
  for (;;) {
    pid_t done = waitpid(-1, &status, 0);
    if (done < 0 && errno == EINTR) continue;
    if (done == test) {
      test_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (done == daemon) {
      /* A crash (or a test's SIGKILL): restart, as a supervisor would. */
      fprintf(stderr, "with_tetherd: tetherd %d ended (%s %d); restarting it\n", (int)daemon,
              WIFSIGNALED(status) ? "signal" : "exit", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
      daemon = start_daemon(tetherd);
      if (daemon < 0) {
        kill(test, SIGTERM);
        waitpid(test, &status, 0);
        remove_tree();
        return 1;
      }
    }
  }
  kill(daemon, SIGTERM);
  while ((rc = waitpid(daemon, &status, 0)) < 0 && errno == EINTR) {}
  rc = 0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "with_tetherd: tetherd did not stop cleanly on SIGTERM (%s %d)\n",
            WIFSIGNALED(status) ? "signal" : "exit", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    rc = 1;
  }
  if (test_status != 0 || rc != 0) print_log();
  remove_tree();
  return test_status != 0 ? test_status : rc;
}
