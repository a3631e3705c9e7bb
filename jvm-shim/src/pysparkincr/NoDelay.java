package pysparkincr;

import java.lang.reflect.Field;
import java.lang.reflect.Proxy;
import java.net.Socket;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.WeakHashMap;
import py4j.CallbackClient;
import py4j.DefaultGatewayServerListener;
import py4j.Gateway;
import py4j.GatewayServer;
import py4j.Py4JPythonClient;
import py4j.Py4JServerConnection;
import py4j.PythonClient;
import py4j.reflection.PythonProxyHandler;

/**
 * Nagle's algorithm off on the py4j connections between this JVM and the Python that serves CALLs.
 *
 * <p>py4j writes a reply through an 8 KB buffer and never sets TCP_NODELAY, so a longer reply
 * leaves in several writes, and the last one waits (Nagle's algorithm) for the ACK of the ones
 * before, which the Python side delays by up to 40 ms (Linux's delayed ACK). Measured here: a 7 KB
 * reply arrived in 0.4 ms, a 9 KB one in 44 ms; a no-op run over 1,000 models paid it on each of its
 * two catalog listings (31 KB of table names each) and on large state listings.
 *
 * <p>Only a speed-up: every failure (a py4j without the fields read here) leaves the sockets as
 * they were.
 *
 * <p>Why Java: the JVM's side of a py4j connection, whose writes are the delayed ones, exists only
 * in the JVM.
 */
public final class NoDelay {
  private NoDelay() {}

  private static final Set<Object> LISTENING = Collections.synchronizedSet(
      Collections.newSetFromMap(new WeakHashMap<>()));
  private static final java.util.Map<String, Field> FIELDS = new java.util.concurrent.ConcurrentHashMap<>();
  private static final Set<Socket> DONE = Collections.synchronizedSet(
      Collections.newSetFromMap(new WeakHashMap<>()));

  /**
   * Sets TCP_NODELAY on the connections of the gateway that {@code handler} (a py4j proxy of a
   * Python object) lives behind, now and, through a listener, on each connection Python opens later.
   */
  static void install(Object handler) {
    GatewayServer server = serverOf(gatewayOf(handler));
    if (server != null && LISTENING.add(server)) {
      server.addListener(new DefaultGatewayServerListener() {
        @Override
        public void connectionStarted(Py4JServerConnection connection) {
          set(connection.getSocket());
        }
      });
    }
    sweep(handler);
  }

  /**
   * Sets TCP_NODELAY on the connections open now: those Python opened and those this JVM opened to
   * Python's callback server (a CALL from JDBC or Spark Connect talks to Python over those).
   */
  static void sweep(Object handler) {
    for (Object connection : connections(gatewayOf(handler))) {
      if (connection instanceof Py4JServerConnection) set(((Py4JServerConnection) connection).getSocket());
    }
  }

  /** Connections of the gateway behind {@code handler} without TCP_NODELAY (tests: 0 once swept). */
  public static int missing(Object handler) {
    Gateway gateway = gatewayOf(handler);
    if (gateway == null) return -1;
    int count = 0;
    for (Object connection : connections(gateway)) {
      try {
        Socket socket = connection instanceof Py4JServerConnection
            ? ((Py4JServerConnection) connection).getSocket() : null;
        if (socket != null && !socket.isClosed() && !socket.getTcpNoDelay()) count++;
      } catch (java.io.IOException ignored) {
        // a socket closing meanwhile is no connection to count
      }
    }
    return count;
  }

  private static Gateway gatewayOf(Object handler) {
    if (handler == null || !Proxy.isProxyClass(handler.getClass())) return null;
    Object invocation = Proxy.getInvocationHandler(handler);
    Object gateway = invocation instanceof PythonProxyHandler
        ? read(PythonProxyHandler.class, "gateway", invocation) : null;
    return gateway instanceof Gateway ? (Gateway) gateway : null;
  }

  private static GatewayServer serverOf(Gateway gateway) {
    Py4JPythonClient client = gateway == null ? null : gateway.getCallbackClient();
    Object server = client instanceof PythonClient ? read(PythonClient.class, "javaServer", client) : null;
    return server instanceof GatewayServer ? (GatewayServer) server : null;
  }

  /** The connections open now: those Python opened, then those this JVM opened to its callback server. */
  private static List<Object> connections(Gateway gateway) {
    List<Object> all = new ArrayList<>();
    if (gateway == null) return all;
    all.addAll(copy(read(GatewayServer.class, "connections", serverOf(gateway))));
    Py4JPythonClient client = gateway.getCallbackClient();
    if (client instanceof CallbackClient) all.addAll(copy(read(CallbackClient.class, "connections", client)));
    return all;
  }

  private static void set(Socket socket) {
    if (socket == null || DONE.contains(socket)) return;
    try {
      socket.setTcpNoDelay(true);
      DONE.add(socket);
    } catch (java.io.IOException ignored) {
      // a closed socket needs nothing
    }
  }

  /** A copy of a py4j connection collection; empty when it changed under us (the next sweep retries). */
  private static Collection<Object> copy(Object connections) {
    if (!(connections instanceof Collection)) return Collections.emptyList();
    Collection<?> all = (Collection<?>) connections;
    try {
      synchronized (all) {
        return new ArrayList<>(all);
      }
    } catch (RuntimeException changed) {
      return Collections.emptyList();
    }
  }

  private static Object read(Class<?> owner, String name, Object target) {
    if (target == null) return null;
    try {
      Field field = FIELDS.computeIfAbsent(owner.getName() + "." + name, k -> accessible(owner, name));
      return field == null ? null : field.get(target);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  private static Field accessible(Class<?> owner, String name) {
    try {
      Field field = owner.getDeclaredField(name);
      field.setAccessible(true);
      return field;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }
}
