#include "runtime/request.h"

#include "runtime/service.h"

namespace aup::runtime {

void HeldRequest::hold(const RequestText& t) {
  form_ = t.form;
  kind_ = t.kind;
  has_key_ = t.has_key;
  text_.assign(t.form == RequestText::Form::Line ? t.line : t.body);
  name_.assign(t.name);
  key_.assign(t.key);
  query_.assign(t.query);
  prepared_ = false;
}

RequestText HeldRequest::text() const {
  RequestText t;
  t.form = form_;
  if (form_ == RequestText::Form::Line) {
    t.line = text_;
  } else {
    t.kind = kind_;
    t.name = name_;
    t.body = text_;
    t.query = query_;
    t.has_key = has_key_;
    t.key = key_;
  }
  return t;
}

const Request& HeldRequest::prepare(const Service& service) {
  if (!prepared_) {
    request_ = service.prepare(text(), doc_);
    prepared_ = true;
  }
  return request_;
}

}  // namespace aup::runtime
