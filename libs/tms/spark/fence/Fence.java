package tms.fence;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.security.AccessControlException;

/**
 * Where a TMS job may delete, rename or write: the table's own location, checked at the moment
 * the file system is asked to change something, whatever code asked (Iceberg's expiry, a
 * commit's metadata clean-up, Hudi's cleaner and rollback, a writer overwriting a file). The Python job checks every path the
 * table's metadata names before it starts an action; this fence is the second line, for what
 * changes between that check and the deletion (a directory swapped for a symlink) and for
 * paths the job cannot see (Hudi's metadata table lists what its cleaner deletes).
 *
 * Public throughout: the S3A file system is loaded by another class loader (beside hadoop-aws),
 * so the two are not one runtime package.
 *
 * Roots come from {@link #arm} (the job's driver, around one table's action) or, in a JVM
 * nobody armed (an executor of a one-table application), from the Hadoop conf key
 * {@value #ROOTS_KEY}. With neither, nothing is refused: Spark's own start-up runs before
 * any table is known.
 */
public final class Fence {
  public static final String ROOTS_KEY = "tms.fence.roots";
  public static final String EXTRA_ROOTS_KEY = "tms.fence.extra-roots";
  public static final String SUBMIT_ONLY_PROPERTY = "tms.fence.submit-only";
  private static final String PREFIX = "TMS fence: ";
  private static volatile Root[] armed = null;
  private static final AtomicLong REFUSED = new AtomicLong();

  private Fence() {}

  /** One root: a resolved local directory, or a store, a bucket (or host) and a path. */
  public static final class Root {
    final boolean local;
    final String scheme; // object stores only: s3 (for s3a, s3n too), gs, hdfs, ...
    final String bucket; // object stores only, lower case
    final String path; // absolute, no trailing slash ("/" for a root)

    Root(boolean local, String scheme, String bucket, String path) {
      this.local = local;
      this.scheme = scheme;
      this.bucket = bucket;
      this.path = path;
    }

    boolean contains(boolean isLocal, String otherScheme, String otherBucket, String otherPath) {
      if (isLocal != local
          || (!local && !(scheme.equals(otherScheme) && bucket.equals(otherBucket)))) {
        return false;
      }
      return path.equals("/") || otherPath.equals(path) || otherPath.startsWith(path + "/");
    }

    @Override
    public String toString() {
      return local ? path : scheme + "://" + bucket + (path.equals("/") ? "" : path);
    }
  }

  /** The object stores a root may name; a store's aliases fold into one name. */
  static String objectScheme(String scheme) {
    switch (scheme) {
      case "s3": case "s3a": case "s3n":
        return "s3";
      case "gs": case "abfs": case "abfss": case "wasbs": case "oss": case "hdfs":
        return scheme;
      default:
        return null;
    }
  }

  /** Allow changes only inside {@code roots} (local paths, file: URIs, or object-store URIs:
   * s3:, s3a:, s3n:, gs:, abfs:, abfss:, wasbs:, oss:, hdfs:). */
  public static void arm(String[] roots) throws IOException {
    armed = parse(roots);
  }

  public static void disarm() {
    armed = null;
  }

  public static boolean isArmed() {
    return armed != null;
  }

  /** How many changes the fence refused in this JVM (the job reports it). */
  public static long refusedCount() {
    return REFUSED.get();
  }

  static Root[] parse(String[] roots) throws IOException {
    if (roots == null || roots.length == 0) {
      throw new IOException(PREFIX + "no roots given");
    }
    List<Root> out = new ArrayList<>();
    for (String raw : roots) {
      String value = raw == null ? "" : raw.trim();
      if (value.isEmpty()) {
        continue;
      }
      URI uri;
      try {
        uri = value.startsWith("/") ? null : new URI(value);
      } catch (java.net.URISyntaxException e) {
        throw new IOException(PREFIX + "root " + value + " is not a URI: " + e.getMessage());
      }
      String scheme = uri == null || uri.getScheme() == null
          ? "file" : uri.getScheme().toLowerCase(Locale.ROOT);
      String path = uri == null ? value
          : (uri.getPath() == null || uri.getPath().isEmpty() ? "/" : uri.getPath());
      if (hasDotSegment(path)) {
        throw new IOException(PREFIX + "root " + value + " has a . or .. segment");
      }
      if (scheme.equals("file")) {
        java.nio.file.Path real = Paths.get(path).toRealPath();
        out.add(new Root(true, "", "", trim(real.toString())));
      } else if (objectScheme(scheme) != null) {
        String bucket = uri == null ? null : uri.getAuthority();
        if (bucket == null || bucket.isEmpty()) {
          throw new IOException(PREFIX + "root " + value + " names no bucket or host");
        }
        out.add(new Root(false, objectScheme(scheme), bucket.toLowerCase(Locale.ROOT),
            trim(path)));
      } else {
        throw new IOException(PREFIX + "root " + value + ": unsupported scheme " + scheme);
      }
    }
    if (out.isEmpty()) {
      throw new IOException(PREFIX + "no roots given");
    }
    return out.toArray(new Root[0]);
  }

  /**
   * The roots of a JVM nobody arms: {@value #ROOTS_KEY} and the operator's
   * {@value #EXTRA_ROOTS_KEY} (a cluster's staging directory, where a client-mode driver
   * uploads the application's files as it starts). None in the JVM that only submits a
   * cluster-mode application (system property {@value #SUBMIT_ONLY_PROPERTY}, which TMS sets
   * through {@code SPARK_SUBMIT_OPTS} for that JVM alone): it gets the same
   * {@code spark.hadoop.*} conf, uploads to the cluster's staging directory and changes no
   * table. A property, not the command line: a table's location on the command line could
   * read like any option.
   */
  public static Root[] fromConf(Configuration conf) throws IOException {
    String[] roots = conf == null ? new String[0] : conf.getTrimmedStrings(ROOTS_KEY);
    if (roots.length == 0 || Boolean.getBoolean(SUBMIT_ONLY_PROPERTY)) {
      return null;
    }
    String[] extra = conf.getTrimmedStrings(EXTRA_ROOTS_KEY);
    String[] all = Arrays.copyOf(roots, roots.length + extra.length);
    System.arraycopy(extra, 0, all, roots.length, extra.length);
    return parse(all);
  }

  private static String trim(String path) {
    String p = path;
    while (p.length() > 1 && p.endsWith("/")) {
      p = p.substring(0, p.length() - 1);
    }
    return p.isEmpty() ? "/" : p;
  }

  private static boolean hasDotSegment(String path) {
    for (String part : path.split("/", -1)) {
      if (part.equals(".") || part.equals("..")) {
        return true;
      }
    }
    return false;
  }

  private static Root[] effective(Root[] fromConf) {
    Root[] now = armed;
    return now != null ? now : fromConf;
  }

  /**
   * Where a local path really is: its parent resolved (symlinks followed, up to the deepest
   * existing ancestor) and its own name kept, since deleting or renaming a symlink changes
   * the link, not what it points to.
   */
  static String resolveLocal(String path) throws IOException {
    java.nio.file.Path p = Paths.get(path).toAbsolutePath();
    java.nio.file.Path parent = p.getParent();
    if (parent == null) {
      return "/";
    }
    List<String> rest = new ArrayList<>();
    java.nio.file.Path existing = parent;
    while (existing != null && !Files.exists(existing, LinkOption.NOFOLLOW_LINKS)) {
      rest.add(0, existing.getFileName().toString());
      existing = existing.getParent();
    }
    java.nio.file.Path real = existing == null ? Paths.get("/") : existing.toRealPath();
    for (String part : rest) {
      real = real.resolve(part);
    }
    return trim(real.resolve(p.getFileName().toString()).toString());
  }

  /** Refuse (an AccessControlException) a change of {@code qualified} outside the roots. */
  public static void check(String op, Path qualified, Root[] fromConf) throws IOException {
    check(op, qualified, fromConf, false);
  }

  /**
   * As {@link #check(String, Path, Root[])} for an operation that writes the file at
   * {@code qualified} (create, overwrite, append, a rename's or a copy's destination): a local
   * path whose last component is a symlink is refused too, since the bytes would land wherever
   * the link points (and a directory link would take a renamed or copied file inside it).
   */
  public static void checkWrite(String op, Path qualified, Root[] fromConf) throws IOException {
    check(op, qualified, fromConf, true);
  }

  /** Refuse an operation outright whenever the fence holds (armed or roots from the conf). */
  public static void checkAll(String op, Path qualified, Root[] fromConf) throws IOException {
    Root[] roots = effective(fromConf);
    if (roots != null) {
      throw refuse(op, qualified, roots, "TMS jobs do not use it, and the fence holds");
    }
  }

  /** A copy from the local disk into {@code fs}: its destination, and its sources when moved. */
  public static void checkCopyIn(org.apache.hadoop.fs.FileSystem fs, boolean delSrc,
      Path[] srcs, Path dst, Root[] fromConf) throws IOException {
    if (effective(fromConf) == null) {
      return;
    }
    if (delSrc) {
      for (Path src : srcs) {
        check("move", localQualified(src), fromConf);
      }
    }
    Path target = fs.makeQualified(dst);
    checkWrite("copy to", target, fromConf);
    for (Path src : srcs) {  // into an existing directory: written as dst/<name>
      if (!src.getName().isEmpty()) {
        checkWrite("copy to", new Path(target, src.getName()), fromConf);
      }
    }
  }

  /** A copy out of {@code fs} to the local disk: its destination, and its source when moved. */
  public static void checkCopyOut(org.apache.hadoop.fs.FileSystem fs, boolean delSrc, Path src,
      Path dst, Root[] fromConf) throws IOException {
    if (effective(fromConf) == null) {
      return;
    }
    if (delSrc) {
      check("move", fs.makeQualified(src), fromConf);
    }
    Path target = localQualified(dst);
    checkWrite("copy to", target, fromConf);
    if (!src.getName().isEmpty()) {
      checkWrite("copy to", new Path(target, src.getName()), fromConf);
    }
  }

  /** A path of the local disk as a {@code file:} URI; another scheme is refused. */
  static Path localQualified(Path p) throws IOException {
    URI uri = p.toUri();
    if (uri.getScheme() != null && !uri.getScheme().equalsIgnoreCase("file")) {
      throw refuse("copy", p, null, "it is not on the local disk");
    }
    String raw = uri.getPath() == null || uri.getPath().isEmpty() ? "/" : uri.getPath();
    return new Path("file", null, Paths.get(raw).toAbsolutePath().toString());
  }

  private static AccessControlException refuse(String op, Path qualified, Root[] roots,
      String why) {
    REFUSED.incrementAndGet();
    return new AccessControlException(PREFIX + op + " of " + qualified + " refused: " + why
        + (roots == null ? "" : " " + Arrays.toString(roots)));
  }

  private static void check(String op, Path qualified, Root[] fromConf, boolean write)
      throws IOException {
    Root[] roots = effective(fromConf);
    if (roots == null) {
      return;
    }
    URI uri = qualified.toUri();
    String scheme = uri.getScheme() == null ? "file" : uri.getScheme().toLowerCase(Locale.ROOT);
    String path = uri.getPath() == null || uri.getPath().isEmpty() ? "/" : uri.getPath();
    boolean ok = false;
    String where = qualified.toString();
    if (!hasDotSegment(path)) {
      if (scheme.equals("file")) {
        if (write && Files.isSymbolicLink(Paths.get(path).toAbsolutePath())) {
          throw refuse(op, qualified, null, "it is a symbolic link (a write would follow it)");
        }
        where = resolveLocal(path);
        for (Root r : roots) {
          ok |= r.contains(true, "", "", where);
        }
      } else if (objectScheme(scheme) != null) {
        String bucket = uri.getAuthority() == null ? "" : uri.getAuthority().toLowerCase(Locale.ROOT);
        for (Root r : roots) {
          ok |= r.contains(false, objectScheme(scheme), bucket, trim(path));
        }
      }
    }
    if (!ok) {
      throw refuse(op, qualified, roots,
          (where.equals(qualified.toString()) ? "it" : "it resolves to " + where + ", which")
          + " lies outside the locations this job may change");
    }
  }
}
