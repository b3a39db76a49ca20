package tms.fence;

import java.io.IOException;
import java.net.URI;
import java.util.EnumSet;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.s3a.S3AFileSystem;

/** S3A, with deletes, renames and writes held to {@link Fence}'s roots. */
public class FencedS3AFileSystem extends S3AFileSystem {
  private Fence.Root[] confRoots;

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    super.initialize(name, conf);
    confRoots = Fence.fromConf(conf);
  }

  @Override
  public boolean delete(Path f, boolean recursive) throws IOException {
    Fence.check("delete", makeQualified(f), confRoots);
    return super.delete(f, recursive);
  }

  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    Fence.check("rename", makeQualified(src), confRoots);
    Fence.check("rename to", makeQualified(dst), confRoots);
    return super.rename(src, dst);
  }

  @Override
  public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite,
      int bufferSize, short replication, long blockSize, Progressable progress)
      throws IOException {
    Fence.check("write", makeQualified(f), confRoots);
    return super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress);
  }

  @Override
  public FSDataOutputStream createNonRecursive(Path f, FsPermission permission,
      EnumSet<CreateFlag> flags, int bufferSize, short replication, long blockSize,
      Progressable progress) throws IOException {
    Fence.check("write", makeQualified(f), confRoots);
    return super.createNonRecursive(f, permission, flags, bufferSize, replication, blockSize,
        progress);
  }

  @Override
  public FSDataOutputStream append(Path f, int bufferSize, Progressable progress)
      throws IOException {
    Fence.check("write", makeQualified(f), confRoots);
    return super.append(f, bufferSize, progress);
  }
}
