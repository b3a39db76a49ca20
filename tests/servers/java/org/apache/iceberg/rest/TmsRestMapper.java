package org.apache.iceberg.rest;

import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Iceberg's own REST object mapper (kebab-case names, every REST request and response
 * serializer registered) is package-private: this one-line accessor lives in its package so
 * the test server speaks exactly the JSON Iceberg's clients expect.
 */
public final class TmsRestMapper {
    private TmsRestMapper() {
    }

    public static ObjectMapper mapper() {
        return RESTObjectMapper.mapper();
    }
}
