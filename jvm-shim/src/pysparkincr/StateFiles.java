package pysparkincr;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Base64;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.execution.datasources.FileStatusCache;
import scala.Option;

/**
 * The state tables' files, read and written through the Hadoop FileSystem in one py4j call each.
 *
 * <p>A state append is a few rows; reading or writing them as a Spark job costs 0.1-0.3 s each
 * (plan, schedule, commit), several times per CALL. The Python side encodes and decodes the
 * Parquet itself (pyarrow) and only moves bytes through here, so a call's state traffic costs
 * milliseconds. Every method works on any Hadoop FileSystem the table may live on.
 *
 * <p>Local tables ({@code file:} locations) are written and read with java.nio: without Hadoop's
 * native library, Hadoop's local FileSystem sets each new file's permissions by running
 * {@code chmod} in a child process, twice per file with its checksum file -- 10-20 ms an append.
 * Files without a checksum file read back the same through Hadoop (it checks what it finds).
 *
 * <p>Why Java: Hadoop's FileSystem (HDFS, object stores) exists only in the JVM, and each state
 * read or append would otherwise be several py4j round trips (open, write, rename, close).
 */
public final class StateFiles {
  private StateFiles() {}

  /**
   * The names of the table's data files, one per line, hidden files ({@code _} and {@code .} prefixes,
   * as Spark skips them) left out; null when the directory is missing. Names only: a state file never
   * changes once in place (each is written whole under a new name, then renamed into the directory), so
   * its name says which rows it holds.
   */
  public static String list(SparkSession session, String dir) throws IOException {
    java.nio.file.Path local = local(dir);
    if (local != null) return listLocal(local);
    Path path = new Path(dir);
    FileSystem fs = path.getFileSystem(session.sessionState().newHadoopConf());
    FileStatus[] statuses;
    try {
      statuses = fs.listStatus(path);
    } catch (FileNotFoundException e) {
      return null;
    }
    StringBuilder out = new StringBuilder();
    for (FileStatus status : statuses) {
      String name = status.getPath().getName();
      if (status.isFile() && !hidden(name)) out.append(name).append('\n');
    }
    return out.toString();
  }

  /**
   * {@link #list} of each of {@code dirs} (one per line), in one call: per directory a line {@code /}
   * ({@code /?} when it is missing: no file name holds a slash), then its files' names. A call that
   * wrote state lists every state table to decide whether to compact it: one round trip, not five.
   */
  public static String listEach(SparkSession session, String dirs) throws IOException {
    StringBuilder out = new StringBuilder();
    for (String dir : dirs.split("\n")) {
      if (dir.isEmpty()) continue;
      String listed = list(session, dir);
      out.append(listed == null ? "/?\n" : "/\n").append(listed == null ? "" : listed);
    }
    return out.toString();
  }

  /**
   * The whole content of {@code dir/name}, base64-encoded: py4j hands a {@code byte[]} to Python through
   * a loop over its bytes (~0.1 s a megabyte), a string as it is, which Python decodes at C speed.
   */
  public static String read(SparkSession session, String dir, String name) throws IOException {
    java.nio.file.Path local = local(dir);
    if (local != null) return Base64.getEncoder().encodeToString(Files.readAllBytes(local.resolve(name)));
    Path path = new Path(dir, name);
    return Base64.getEncoder().encodeToString(
        readFully(path.getFileSystem(session.sessionState().newHadoopConf()), path));
  }

  /**
   * The files {@code names} (one per line) of {@code dir} in one call, in that order, each as its
   * length (4 bytes, big-endian) then its bytes, the whole base64-encoded (see {@link #read}): a process
   * reading a table of hundreds of small files for the first time would otherwise pay a round trip (and
   * a Hadoop configuration) per file.
   */
  public static String readAll(SparkSession session, String dir, String names) throws IOException {
    java.nio.file.Path local = local(dir);
    FileSystem fs = local != null ? null : new Path(dir).getFileSystem(session.sessionState().newHadoopConf());
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    java.io.DataOutputStream out = new java.io.DataOutputStream(bytes);
    for (String name : names.split("\n")) {
      if (name.isEmpty()) continue;
      byte[] data = local != null ? Files.readAllBytes(local.resolve(name)) : readFully(fs, new Path(dir, name));
      out.writeInt(data.length);
      out.write(data);
    }
    out.flush();
    return Base64.getEncoder().encodeToString(bytes.toByteArray());
  }

  private static byte[] readFully(FileSystem fs, Path path) throws IOException {
    long length = fs.getFileStatus(path).getLen();
    byte[] data = new byte[(int) length];
    try (InputStream in = fs.open(path)) {
      org.apache.hadoop.io.IOUtils.readFully(in, data, 0, data.length);
    }
    return data;
  }

  /**
   * Write {@code data} as {@code dir/name}, atomically: into {@code dir/staging/name} first (hidden
   * from readers by its {@code _} prefix), then moved by one rename; the staging directory is
   * deleted either way. A crash leaves at most the staging directory behind (locally: a hidden
   * file {@code dir/staging}).
   */
  public static void append(SparkSession session, String dir, String staging, String name, byte[] data)
      throws IOException {
    java.nio.file.Path local = local(dir);
    if (local != null) {
      appendLocal(local, staging, name, data);
      return;
    }
    Path root = new Path(dir);
    Path stage = new Path(root, staging);
    FileSystem fs = root.getFileSystem(session.sessionState().newHadoopConf());
    try {
      Path staged = new Path(stage, name);
      try (OutputStream out = fs.create(staged, false)) {
        out.write(data);
      }
      if (!fs.rename(staged, new Path(root, name))) {
        throw new IOException("could not move " + staged + " into " + root);
      }
    } finally {
      fs.delete(stage, true);
    }
  }

  private static void appendLocal(java.nio.file.Path dir, String staging, String name, byte[] data)
      throws IOException {
    Files.createDirectories(dir);
    java.nio.file.Path staged = dir.resolve(staging);
    try {
      Files.write(staged, data, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
      Files.move(staged, dir.resolve(name), StandardCopyOption.ATOMIC_MOVE);
    } finally {
      Files.deleteIfExists(staged);
    }
  }

  /**
   * A name ending {@code .parquet} is taken as a file without a stat (nothing writes a directory so named
   * into a table's directory): a stat is a system call, 4 us each on this project's machine, and a state
   * table right after an apply of 1,000 models holds 3,000 files (12 ms a listing, several a call).
   */
  private static String listLocal(java.nio.file.Path dir) throws IOException {
    StringBuilder out = new StringBuilder();
    try (DirectoryStream<java.nio.file.Path> entries = Files.newDirectoryStream(dir)) {
      for (java.nio.file.Path entry : entries) {
        String name = entry.getFileName().toString();
        if (hidden(name)) continue;
        if (name.endsWith(".parquet") || Files.isRegularFile(entry)) out.append(name).append('\n');
      }
    } catch (NoSuchFileException e) {
      return null;
    }
    return out.toString();
  }

  private static boolean hidden(String name) {
    return name.startsWith("_") || name.startsWith(".");
  }

  /** The local directory of a {@code file:} location, else null (any other FileSystem goes through Hadoop). */
  private static java.nio.file.Path local(String dir) {
    java.net.URI uri = new Path(dir).toUri();
    return "file".equals(uri.getScheme()) ? Paths.get(uri.getPath()) : null;
  }

  /**
   * Create {@code dir/name} holding {@code data} only if no file of that name exists: true when this
   * call created it, false when it was there already. The claims of pyspark-incr rest on this being
   * atomic: locally it is one {@code open(O_CREAT|O_EXCL)}; on HDFS {@code create} without overwrite
   * is decided by the NameNode; on an object store it holds only where the connector makes it a
   * conditional put (S3A with {@code fs.s3a.create.conditional.enabled}). The content lands after
   * the name, so a reader may briefly see the file empty. Without {@code makeParents} a missing
   * {@code dir} fails the create (false): a claim's generation directory deleted after it was
   * fenced cannot be brought back by its stalled holder.
   */
  public static boolean createExclusive(SparkSession session, String dir, String name, byte[] data,
      boolean makeParents) throws IOException {
    return createExclusive(session.sessionState().newHadoopConf(), dir, name, data, makeParents);
  }

  /** {@link #createExclusive(SparkSession, String, String, byte[], boolean)} with a Hadoop configuration. */
  public static boolean createExclusive(org.apache.hadoop.conf.Configuration conf, String dir, String name,
      byte[] data, boolean makeParents) throws IOException {
    java.nio.file.Path local = local(dir);
    if (local != null) {
      if (makeParents) Files.createDirectories(local);
      try {
        Files.write(local.resolve(name), data, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
        return true;
      } catch (java.nio.file.FileAlreadyExistsException | NoSuchFileException e) {
        return false;
      }
    }
    Path path = new Path(dir, name);
    FileSystem fs = path.getFileSystem(conf);
    try (OutputStream out = makeParents ? fs.create(path, false)
        : fs.createNonRecursive(path, false, 4096, fs.getDefaultReplication(path), fs.getDefaultBlockSize(path), null)) {
      out.write(data);
      return true;
    } catch (org.apache.hadoop.fs.FileAlreadyExistsException | FileNotFoundException e) {
      return false;
    }
  }

  /**
   * Every file under {@code dir}, {@code depth} levels of directories down at most, one line each:
   * {@code relative path TAB length TAB modification time (epoch ms, the storage's clock)}; empty
   * when {@code dir} is missing. Claims are read this way: one call however many keys and markers.
   */
  public static String listTree(SparkSession session, String dir, int depth) throws IOException {
    Path root = new Path(dir);
    FileSystem fs = root.getFileSystem(session.sessionState().newHadoopConf());
    StringBuilder out = new StringBuilder();
    listInto(fs, root, "", depth, out);
    return out.toString();
  }

  private static void listInto(FileSystem fs, Path dir, String prefix, int depth, StringBuilder out)
      throws IOException {
    FileStatus[] statuses;
    try {
      statuses = fs.listStatus(dir);
    } catch (FileNotFoundException e) {
      return; // missing, or deleted since the outer listing
    }
    for (FileStatus status : statuses) {
      String name = prefix + status.getPath().getName();
      if (status.isDirectory()) {
        if (depth > 0) listInto(fs, status.getPath(), name + "/", depth - 1, out);
      } else {
        out.append(name).append('\t').append(status.getLen()).append('\t')
            .append(status.getModificationTime()).append('\n');
      }
    }
  }

  /** Delete each of {@code names} (newline-separated, relative to {@code dir}), directories with their content. */
  public static void deleteAll(SparkSession session, String dir, String names) throws IOException {
    Path root = new Path(dir);
    FileSystem fs = root.getFileSystem(session.sessionState().newHadoopConf());
    for (String name : names.split("\n")) {
      if (!name.isEmpty()) fs.delete(new Path(root, name), true);
    }
  }

  /** Delete {@code dir/name}; false when it was not there. */
  public static boolean delete(SparkSession session, String dir, String name) throws IOException {
    Path path = new Path(dir, name);
    return path.getFileSystem(session.sessionState().newHadoopConf()).delete(path, false);
  }

  /**
   * Make Spark list the table's files again on its next read, as REFRESH TABLE does, without
   * resolving the table: its cached relation and the shared file listing cache are dropped.
   */
  public static void invalidate(SparkSession session, String db, String table) {
    session.sessionState().catalog().invalidateCachedTable(TableIdentifier.apply(table, Option.apply(db)));
    FileStatusCache.getOrCreate(session).invalidateAll();
  }
}
